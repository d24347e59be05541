// Package mcpregistry speaks the MCP Registry's formats: the server.json a
// server publishes (validated against the registry's published JSON schema,
// embedded here: [SchemaURL]) and the v0.1 read API's answers
// ([ServerResponse], [ServerList]).
//
// toolhub serves its catalog as an MCP sub-registry (api/registryapi.go):
// each vendor is one server entry whose only remote is the vendor's
// /mcp/vendors/{id} endpoint on toolhub. A vendor registers by publishing
// its server.json, which [Decode] checks and [ServerJSON.Vendor] turns into
// a vendor spec that then goes through the same checks as any registration:
//
//	doc, err := mcpregistry.Decode(body) // *ValidationError: one issue per failing place
//	spec, err := doc.Vendor("weather", &mcpregistry.VendorOptions{AllowStdio: false})
//	// spec.MCP: the first streamable-http remote (else sse); packages only
//	// when there is no remote and stdio vendors are allowed.
package mcpregistry
