"""(placeholder docstring: filled in by its issue)"""
