"""The connector's configuration: its settings (`settings`, read from code, the environment and a
YAML file; checked in the groups of `settings_groups`), the admin's node groups and namespace
mapping, and the blob store's settings. Above the plain types; below everything that acts."""
