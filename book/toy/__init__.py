"""The takeout-order world and the small encoder the book trains on it: orders, baselines, the
model, fitting, probing, the default run, and the encoder's variants. Imports
:mod:`book.ideas` and :mod:`book.kit`."""
