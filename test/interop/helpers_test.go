package interop

import "github.com/toolhub/toolhub/hub"

func callOf(name string, args map[string]any) *hub.Call {
	return &hub.Call{Tenant: "default", Name: name, Arguments: args}
}
