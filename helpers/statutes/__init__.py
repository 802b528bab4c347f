"""The statute domain in text: Chinese numerals, article labels and keys, statute versions, citations, and
the quotes and quantities an answer takes from the articles."""
