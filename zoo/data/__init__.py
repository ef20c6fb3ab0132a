"""Corpus readers: a local path first, the public URL and checksum second."""
