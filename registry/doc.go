// Package registry owns what toolhub knows about the outside world: vendors,
// their tools (with compiled JSON schemas), capabilities and tenants.
//
// A [Vendor] is a spec: how to reach an MCP server or A2A agent, its limits and
// timeouts. Its tools are discovered at run time and registered into the live
// [Catalog] with [Catalog.SetVendorTools], which compiles every input and output
// schema once, names the tool in the catalog (see [CatalogName]) and rejects
// only the tools whose schema is bad:
//
//	cat := registry.NewCatalog()
//	rejected := cat.SetVendorTools("weather-a", defs) // []error, one per bad tool
//	e, ok := cat.Lookup("weather-a__current_weather")
//	err := e.Tool.ValidateInput(args) // *SchemaError with JSON pointers
//
// A [Capability] is a logical tool (image.generate) backed by an ordered chain
// of vendor tools with argument mappings ([Mapping], applied by [ApplyMappings]).
//
// What a vendor's tools say to a model is pinned: a [Pinner] in front of the
// catalog ([Catalog.SetGate]) serves each tool as it was approved ([PinHash]
// over its name, title, description, annotations and schemas) and holds any
// difference, with its [PinDiff], for an operator:
//
//	pins := registry.NewPinner(&registry.PinnerOptions{Store: store}) // store: a PinStore, e.g. a Store
//	cat.SetGate(pins.Gate)
//	cat.SetVendorTools("weather-a", defs) // a changed description: the pinned one serves
//	held, _ := pins.Held(ctx)             // held["weather-a"][0].Diff: description [-city-] {+town+}
//	pins.Approve(ctx, "weather-a", "key_op")
//	cat.Regate("weather-a")               // now served
//
// Specs that are registered at run time live in a [Store]: in memory
// ([NewMemoryStore]), SQLite or PostgreSQL; all pass one contract suite.
package registry
