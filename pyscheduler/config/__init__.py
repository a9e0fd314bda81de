"""Scheduler configuration: typed settings built from YuniKorn-style flat string maps."""
