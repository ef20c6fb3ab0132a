"""A translator's tokenizer written from ``NAME.json`` alone, as an app would write it.

It imports nothing of zoo: the test runs it in a process where ``import zoo`` fails,
and compares its ids with the zoo preprocessor's. Usage:
``python runner_config_tokenizer.py NAME.json TEXTS.json`` prints the ids as JSON.
"""

import json
import re
import sys


def source_pieces(text, config):
    for pattern, replacement in config["tokenize_rules"]:
        text = re.sub(pattern, replacement, text)
    words = [word for word in text.split(" ") if word]
    if config["wordpiece"] is None:
        return words
    prefix = config["wordpiece"]["continuation_prefix"]
    longest = config["wordpiece"]["max_word_characters"]
    vocabulary = set(config["source_vocabulary"])
    unknown = config["source_vocabulary"][config["special_ids"]["unknown"]]
    pieces = []
    for word in words:
        word_pieces, start = [], 0
        while start < len(word) and len(word) <= longest:
            for end in range(len(word), start, -1):
                candidate = (prefix if start else "") + word[start:end]
                if candidate in vocabulary:
                    word_pieces.append(candidate)
                    start = end
                    break
            else:
                break
        pieces += word_pieces if start == len(word) and word_pieces else [unknown]
    return pieces


def tokenize(text, config):
    index = {token: i for i, token in enumerate(config["source_vocabulary"])}
    pieces = source_pieces(text, config)[: config["max_source_length"]]
    return [index[piece] for piece in pieces] if config["wordpiece"] else [
        index.get(piece, config["special_ids"]["unknown"]) for piece in pieces]


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        runner_config = json.load(handle)
    with open(sys.argv[2], encoding="utf-8") as handle:
        texts = json.load(handle)
    print(json.dumps([tokenize(text, runner_config) for text in texts]))
