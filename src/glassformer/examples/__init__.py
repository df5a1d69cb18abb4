"""Worked examples that run the library end to end, each a module with its own command line.

    karate.py     ``python -m glassformer.examples.karate``: a transformer encoder as a GNN on
                  Zachary's karate club, against the same encoder with full attention
    positions.py  ``python -m glassformer.examples.positions``: predicting each token's
                  position, an encoder and a causal decoder with and without an encoding
    road_to_qk.py ``python -m glassformer.examples.road_to_qk``: the built-in road-to-qk config
                  trained with each attention score (dot, shared, separate): which learn to
                  attend to the previous token

The examples sit above the library (they use ``nn``, ``graphs``, ``inspect`` and ``runs``);
nothing in the library imports them.
"""
