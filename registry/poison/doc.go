// Package poison scans what a vendor puts in front of the model — a tool's
// name, title, description, annotations and the descriptions and titles in
// its input and output schemas — and a tool's results for text that speaks
// to the model instead of describing the tool: tool poisoning.
//
// A [Finding] names the tool, the field (a path such as
// "inputSchema/properties/path/description"), the rule and the offending
// span, with its byte offset in the field's text, so
// text[f.Offset:f.Offset+len(f.Span)] == f.Span. The rules ([Rules]):
//
//   - [RuleInstruction]: imperatives aimed at the assistant ("you must",
//     "always call", "before using this tool, read", "do not tell the user",
//     "ignore previous instructions", "system prompt"; 忽略之前的指令,
//     你必须, 不要告诉用户, 在使用此工具之前先读取, 系统提示);
//   - [RuleTag]: <IMPORTANT>, <system>, [SYSTEM], <!-- --> and similar
//     markup that frames text as instructions;
//   - [RuleToolReference]: references to other tools or vendors ("instead of
//     the X tool", "call tool Y first", a vendor__tool name that is not the
//     tool's own);
//   - [RuleSecret]: references to secrets and credential files (~/.ssh,
//     id_rsa, .env, /etc/passwd, mcp.json; an API key, token, password or
//     私钥 that the text asks to send, pass or include);
//   - [RuleInvisible]: zero-width characters (U+200B–U+200D, U+2060,
//     U+FEFF), bidi controls (U+202A–U+202E, U+2066–U+2069) and tag
//     characters (U+E0000–U+E007F), which hide text from a human reviewer;
//   - [RuleConfusable]: a word that mixes Latin letters with Cyrillic or
//     Greek look-alikes.
//
// Scanning a tool before it is listed, and letting an operator allow what
// was reviewed:
//
//	findings := poison.ScanTool(def)
//	findings = poison.Filter(findings, []poison.Allow{
//		{Tool: "add", Rule: poison.RuleSecret, Span: "mcp.json"},
//	})
//	if len(findings) > 0 {
//		// hold the tool for an operator
//	}
//
// A tool result is data, not instructions: [ScanText] scans a result's
// text content the same way ("content/0/text"), and the hub marks (never
// edits) a result with findings.
//
// The scanner is a set of patterns, not a model: it is measured on a corpus
// of poisoned and clean real-world descriptions in testdata (precision and
// recall in docs/security.md), and is linear in the text it reads.
package poison
