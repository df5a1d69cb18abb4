"""glassformer: transformers built from their formulas, and made to be looked inside."""

__version__ = "0.1.0"
