"""Side-by-side benchmarks of glassformer against its peers; ``python -m benchmarks`` runs them
all (see benchmarks/__main__.py). Results are written to bench-results/*.json."""
