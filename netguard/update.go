package netguard

// Update replaces the policy's allow and deny lists (a config reload),
// keeping its resolver, dialer and sandbox. Checks and dials from then on, including those of
// the clients [Policy.Client] returned earlier, use the new lists;
// connections already open are not closed. On error nothing changes.
func (p *Policy) Update(o Options) error {
	o.Resolver, o.Dialer, o.Sandbox = p.res, p.dialer, nil // p.dialer has the sandbox's Control already
	n, err := New(o)
	if err != nil {
		return err
	}
	p.next.Store(n)
	return nil
}
