"""Planning: a window spec and aggregations, resolved against a schema, become a
physical plan node naming its strategy; `describe` says it in words."""
