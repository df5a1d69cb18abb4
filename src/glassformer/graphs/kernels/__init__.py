"""Attention that visits only a graph's edges: the kernels behind the graph algebra.

    sparse.py         ``local_attention``: a band of keys per block of queries, O(T·w), and
                      ``edge_attention`` re-exported from messages.py
    band.py           the band's autograd Function, block by block (``BandAttention``)
    band_geometry.py  where each block of queries looks (``BandGeometry``) and which rows a
                      loop step takes (``Rows``)
    extra_keys.py     keys beyond the band (global columns, random keys), merged by log-sum-exp
    dense_rows.py     the few dense rows (global tokens' queries), forward and backward
    messages.py       ``edge_attention``: message passing over an edge list, O(E·D)
    csr.py            the sparse products on the edges that messages.py runs on
"""

from .messages import edge_attention
from .sparse import local_attention

__all__ = ["edge_attention", "local_attention"]
