"""Shared building blocks used across pyscheduler: errors and Go-compatible parsing."""
