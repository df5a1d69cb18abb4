"""Attention graphs: which query may receive a message from which key, and attention
that costs what its edges cost."""
