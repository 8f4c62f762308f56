"""Classroom assignments (placeholder while restructuring)."""
