// Package drillvendors gives toolhub's fault drills (internal/drill) the
// example vendors: `toolhub drill`, `toolhub bench` and the tests pass
// [Server] as a lab's or a drill's [drill.VendorServer]. The drills' faults
// are the example vendors' modes ([drill.Fault] "fail" is
// [vendors.ModeFail], …).
//
//	l, err := drillvendors.NewLab(ctx, drill.LabOptions{Config: drill.FailoverConfig})
//	if err != nil {
//		return err
//	}
//	defer l.Close()
//	rep, err := drill.Failover(ctx, l, 200, time.Second, drill.FaultFail)
package drillvendors

import (
	"context"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// Server serves the example vendors to the drills.
var Server drill.VendorServer = server{}

// NewLab is [drill.NewLab] with the example vendors when o.Vendors is nil.
func NewLab(ctx context.Context, o drill.LabOptions) (*drill.Lab, error) {
	if o.Vendors == nil {
		o.Vendors = Server
	}
	return drill.NewLab(ctx, o)
}

type server struct{}

func (server) Names() []string { return vendors.Names() }

func (server) Serve(opts map[string]*drill.VendorOptions) (*drill.ServedVendors, error) {
	vo := make(map[string]*vendors.Options, len(opts))
	for name, o := range opts {
		if o == nil {
			vo[name] = nil
			continue
		}
		v := &vendors.Options{Knobs: vendors.Knobs{Mode: vendors.Mode(o.Knobs.Fault), Latency: o.Knobs.Latency}}
		if o.Gate != nil {
			v.Sleep = o.Gate.Sleep
		}
		vo[name] = v
	}
	vs, addr, closeAll, err := vendors.ServeVendors(vo)
	if err != nil {
		return nil, err
	}
	s := &drill.ServedVendors{Vendors: make(map[string]drill.Vendor, len(vs)), Addr: addr, Close: closeAll}
	for name, v := range vs {
		s.Vendors[name] = Vendor{v}
	}
	return s, nil
}

// Vendor is an example vendor seen by a drill; its Knobs are the
// vendor's Mode and Latency, and setting them keeps its other knobs.
type Vendor struct{ *vendors.Vendor }

var _ drill.Vendor = Vendor{}

// Knobs returns the vendor's mode as a fault, and its latency.
func (v Vendor) Knobs() drill.Knobs {
	k := v.Vendor.Knobs()
	f := drill.Fault(k.Mode)
	if f == "" {
		f = drill.FaultOK
	}
	return drill.Knobs{Fault: f, Latency: k.Latency}
}

// SetKnobs sets the vendor's mode and latency, keeping its other knobs.
func (v Vendor) SetKnobs(dk drill.Knobs) error {
	k := v.Vendor.Knobs()
	k.Mode, k.Latency = vendors.Mode(dk.Fault), dk.Latency
	return v.Vendor.SetKnobs(k)
}

// Counters returns the counters the drills read.
func (v Vendor) Counters() drill.VendorCounters {
	c := v.Vendor.Counters()
	return drill.VendorCounters{CallsTotal: c.CallsTotal, OK: c.OK, InFlight: c.InFlight, UniqueCompleted: c.UniqueCompleted}
}
