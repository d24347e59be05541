// Package toolcorpus generates a realistic catalog of MCP vendors for
// measuring tool search and the hub at scale: vendors in many domains,
// with near-duplicates (several weather, map and image vendors, each
// naming and describing the same functions its own way, some in
// Chinese), and a set of goals, half English and half Chinese, each with
// the functions that answer it.
//
//	c := toolcorpus.Generate(1000, 1) // 1,000 vendors × 10 tools, seed 1
//	for _, v := range c.Vendors { cat.SetVendorTools(v.ID, v.Tools) }
//	for _, g := range c.Goals { hits := search(g.Text); … g.Right(hit.Vendor, hit.Tool) … }
//
// The same vendor count and seed give the same corpus.
package toolcorpus
