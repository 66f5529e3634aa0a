"""Scheduling: which node suits a pod (matching), whether a gang fits, and Armada's scheduling reports."""
