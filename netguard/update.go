package netguard

// Update replaces the policy's allow and deny lists (a config reload),
// keeping its resolver. Checks and dials from then on, including those of
// the clients [Policy.Client] returned earlier, use the new lists;
// connections already open are not closed. On error nothing changes.
func (p *Policy) Update(o Options) error {
	o.Resolver = p.res
	n, err := New(o)
	if err != nil {
		return err
	}
	p.next.Store(n)
	return nil
}
