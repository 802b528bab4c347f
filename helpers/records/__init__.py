"""The records components pass each other, and the names several layers share: retrieval rankings, the
loop's rounds, the result of a question, the contracts (path and mode names), cancellation of a run."""
