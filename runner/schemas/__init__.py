"""The JSON Schemas of the spec files (package data) and the fastjsonschema checks generated from them."""
