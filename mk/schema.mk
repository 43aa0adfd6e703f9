# docs/schema.md, the record schema's reference, is generated from the Go
# definitions (internal/schemadoc); `go test ./internal/schemadoc` (part of
# make test) fails when the committed file is not current.

.PHONY: schema-doc

## schema-doc: regenerate docs/schema.md from traj/, export/rows.go and stream/
schema-doc:
	go test ./internal/schemadoc -run TestSchemaDocIsCurrent -update
