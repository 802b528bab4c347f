"""Text to vectors: the jieba tokenizer (with its legal dictionary and stopwords in data/), BM25's sparse
vectors, the SentencePiece tokenizer and the e5 encoder on ONNX Runtime."""
