// Package drill runs fault drills: a hub and vendors, steady traffic, a
// fault, and what happened measured — time to detect, time to fall back,
// success rate during the fault, time to recover, and usage events lost or
// counted twice. `toolhub drill`, `toolhub bench` and the tests in
// test/drill use it.
//
// The vendors come from the caller, as a [VendorServer] whose [Vendor]s
// take a [Fault] and report [VendorCounters]; package drill never imports
// examples/. `toolhub drill`, `toolhub bench` and the tests pass the
// example vendors (examples/drillvendors, whose NewLab is [NewLab] with
// them).
//
// The drills:
//
//   - [Failover]: the primary vendor of a capability fails, hangs, answers
//     slowly or with garbage, in a [Lab] (a hub in this process).
//   - [RedisOutage] and [PostgresOutage]: the shared store, reached
//     through a [Proxy], is cut mid-load and restored.
//   - [InstanceKill]: several `toolhub serve` processes on one Redis and
//     PostgreSQL, one killed with SIGKILL while jobs run on it, restarted.
//   - [StoreFaults]: two `toolhub serve` processes on a Redis and a
//     PostgreSQL of the drill's own (so they can be hung and stopped):
//     Redis hung, an instance killed, PostgreSQL stopped, an instance
//     restarted while Redis is gone; answers per phase and instance.
//   - [SharedLimit]: limiter accuracy across hubs on one Redis limit.
//
// The pieces [InstanceKill] runs real processes with serve the tests in
// test/crash and test/cluster too: [StartProcess] and
// [Process] (wait until it listens, its vendors ready, kill, stop, logs),
// and a [Gate] that holds vendor calls; package drilltest
// has their test-side helpers.
//
// A sketch:
//
//	rep, err := drill.RedisOutage(ctx, &drill.OutageOptions{Vendors: drillvendors.Server, Rate: 200})
//	if err != nil {
//		return err
//	}
//	fmt.Println(rep) // redis down at 200 calls/s: … usage events lost 0, duplicated 0
//	if !rep.Ok() { … }
package drill
