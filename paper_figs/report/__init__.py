"""REPORT.md: the confirmatory family and the markdown writer."""
