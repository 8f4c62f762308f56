"""Experiments that produce a chapter's numbers (head counts, training stability, mask bugs, what
trained heads attend to): data, not drawing. Imports the toy and real models, the ideas and
the kit."""
