package main

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report is everything the bench measured.
type report struct {
	settings    settings
	started     time.Time
	finished    time.Time
	handlers    *handlerResult
	admission   *admissionResult
	convergence *convergenceResult
	conversion  *conversionResult
	memory      *memoryResult
	hostile     *hostileResult
	startups    []time.Duration
	certSwap    trials
}

func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# webhook-operator bench")
	p("")
	p("%s, %d CPUs, %s, %s. Each cell: median of the rounds [min–max]; variants interleaved round by round.",
		r.started.UTC().Format(time.RFC3339), runtime.NumCPU(), runtime.Version(), r.finished.Sub(r.started).Round(time.Second))
	p("")
	if r.admission != nil {
		r.admissionTables(p)
	}
	if r.handlers != nil {
		r.handlerTables(p)
	}
	if r.convergence != nil {
		r.convergenceTables(p)
	}
	if r.memory != nil {
		r.memoryTable(p)
	}
	if r.hostile != nil {
		r.hostileTables(p)
	}
	if len(r.startups) > 0 {
		r.startTable(p)
	}
	if r.conversion != nil {
		r.conversionTables(p)
	}
	return b.String()
}

func (r *report) admissionTables(p func(string, ...any)) {
	a := r.admission
	p("## 1. Admission through the API server")
	p("")
	p("Server-side dry-run creates, and dry-run merge patches of the spec, of the Welcome sample: with our webhooks, whose")
	p("matchConditions call neither for the sample (the CRD's schema defaults it, and may-be-refused passes it), and with an")
	p("empty serviceType and an image added, so that both are called (both called); the same")
	p("CRD in a group nothing matches (bare); with a ValidatingAdmissionPolicy holding the Welcome rules in CEL (VAP); and with")
	p("that and a MutatingAdmissionPolicy for the defaults (VAP+MAP); and with a mutating and a validating webhook that both call")
	p("a trivial stdlib handler (allow, no patch), served from the bench process: the floor of two webhook calls.")
	p("%d rounds of %d requests per cell.", a.settings.rounds, a.settings.requests)
	p("\"Added\" is a variant's p50 minus the bare CRD's in the same round.")
	p("")
	p("| request | concurrency | bare p50 | webhooks p50 | webhooks p50, both called | VAP p50 | VAP+MAP p50 | trivial webhooks p50 | webhooks ÷ bare |")
	p("|---|---|---|---|---|---|---|---|---|")
	for _, op := range []string{"create", "update"} {
		for _, n := range a.settings.concurrency {
			cell := func(v string) *latencyTrials { return a.cells[admissionKey{op, n, v}] }
			bare, hooks := cell("bare CRD"), cell("webhooks")
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %s |", op, n, bare.p50.ms(), hooks.p50.ms(),
				cell("webhooks, both called").p50.ms(), cell("VAP").p50.ms(),
				cell("VAP+MAP").p50.ms(), cell("trivial webhooks").p50.ms(), ratio(hooks.p50, bare.p50).x())
		}
	}
	p("")
	p("What each adds to the bare CRD's p50, and our webhooks' addition as a multiple of the others':")
	p("")
	p("| request | concurrency | webhooks | webhooks, both called | VAP | VAP+MAP | trivial webhooks | ÷ VAP+MAP's | ÷ VAP's | ÷ trivial webhooks' |")
	p("|---|---|---|---|---|---|---|---|---|---|")
	for _, op := range []string{"create", "update"} {
		for _, n := range a.settings.concurrency {
			added := func(v string) trials {
				return minus(a.cells[admissionKey{op, n, v}].p50, a.cells[admissionKey{op, n, "bare CRD"}].p50)
			}
			hooks, vap, mapp, trivial := added("webhooks"), added("VAP"), added("VAP+MAP"), added("trivial webhooks")
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |", op, n, hooks.ms(), added("webhooks, both called").ms(),
				vap.ms(), mapp.ms(), trivial.ms(), ratio(hooks, mapp).x(), ratio(hooks, vap).x(), ratio(hooks, trivial).x())
		}
	}
	p("")
	p("| request | concurrency | bare p99 | webhooks p99 | VAP p99 | VAP+MAP p99 | trivial webhooks p99 | webhooks ÷ bare |")
	p("|---|---|---|---|---|---|---|---|")
	for _, op := range []string{"create", "update"} {
		for _, n := range a.settings.concurrency {
			cell := func(v string) *latencyTrials { return a.cells[admissionKey{op, n, v}] }
			bare, hooks := cell("bare CRD"), cell("webhooks")
			p("| %s | %d | %s | %s | %s | %s | %s | %s |", op, n, bare.p99.ms(), hooks.p99.ms(), cell("VAP").p99.ms(), cell("VAP+MAP").p99.ms(),
				cell("trivial webhooks").p99.ms(), ratio(hooks.p99, bare.p99).x())
		}
	}
	p("")
	p("kube-apiserver's own `apiserver_admission_webhook_admission_duration_seconds` over the comparison:")
	p("")
	for _, name := range slices.Sorted(maps.Keys(a.webhookMeans)) {
		p("- %s: %s", name, a.webhookMeans[name])
	}
	p("")
}

func (r *report) handlerTables(p func(string, ...any)) {
	h := r.handlers
	p("## 2. Webhook handlers over HTTPS")
	p("")
	p("AdmissionReviews of each sample's create POSTed to controller-runtime's webhook server as the manager runs it (TLS 1.2+,")
	p("HTTP/1.1) and to a trivial stdlib TLS handler (decode, allow, encode), in one process; %d rounds of %s per cell.",
		h.settings.rounds, h.settings.duration)
	p("Throughput ratio is the handler's requests/s ÷ the trivial handler's in the same round.")
	p("")
	for _, keepAlive := range []bool{true, false} {
		for _, n := range h.settings.concurrency {
			mode := "keep-alive"
			if !keepAlive {
				mode = "new connection per request"
			}
			p("**%s, concurrency %d**", mode, n)
			p("")
			p("| handler | requests/s | ÷ trivial | p50 µs | p99 µs |")
			p("|---|---|---|---|---|")
			trivial := h.cells[handlerKey{"trivial stdlib", keepAlive, n}]
			for _, t := range h.targets {
				cell := h.cells[handlerKey{t, keepAlive, n}]
				p("| %s | %s | %s | %s | %s |", t, cell.throughput.format("", 0), ratio(cell.throughput, trivial.throughput).x(),
					cell.p50.format("", 0), cell.p99.format("", 0))
			}
			p("")
		}
	}
}

func (r *report) convergenceTables(p func(string, ...any)) {
	c := r.convergence
	p("## 3. Convergence")
	p("")
	p("%d objects of each kind (the samples), created from %d workers. Operator: from the first create until every object's",
		c.settings.perKind, c.settings.workers)
	p("status reports its generation (each then has exactly one Deployment and one Service it controls). Plain client: %d",
		c.settings.workers)
	p("workers create each object and apply the same Deployment and Service and a status, while the operator's controllers")
	p("are idle (the bench holds their Lease). %d alternating rounds.", c.settings.rounds)
	p("")
	p("| plain client | operator | operator ÷ plain client |")
	p("|---|---|---|")
	p("| %s | %s | %s |", c.plain.format(" s", 1), c.operator.format(" s", 1), ratio(c.operator, c.plain).x())
	p("")
	p("The operator's API requests per object (from the API server's audit log; leader election's Lease and Event left out), last round:")
	p("")
	if len(c.requestsPerObject) > 0 {
		last := c.requestsPerObject[len(c.requestsPerObject)-1]
		for _, key := range slices.Sorted(maps.Keys(last)) {
			p("- %s: %.2f", key, last[key])
		}
	}
	p("")
	p("Steady state: a restarted manager reconciles every object once (%s reconciles) and makes %s writes.",
		c.steadyReconciles.format("", 0), c.steadyWrites.format("", 0))
	if len(c.steadyWriteKinds) > 0 {
		p("Writes seen: %s.", strings.Join(c.steadyWriteKinds, ", "))
	}
	p("")
}

func (r *report) memoryTable(p func(string, ...any)) {
	m := r.memory
	mib := func(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	p("## 4. A new leader's memory")
	p("")
	p("Custom resources (the kinds in turn) stored with their Deployments and Services as the operator would have applied them,")
	p("by a plain client under its field manager; at each step a new leader (manager process) starts with config/manager's")
	p("memory limit, %d MiB (so the Go runtime's soft limit is 90%% of it), and is measured once it has reconciled every object:", managerMemoryLimit>>20)
	p("its live heap (HeapAlloc after a forced GC), its peak RSS (VmHWM), and the applies it made. Ready is exec to /readyz.")
	if err := m.cgroupErr(); err != nil {
		p("The leaders ran without a memory cgroup: %v.", err)
	} else {
		p("Each leader runs in a memory cgroup with that limit, as kubelet would run its container: the kernel charges it what the")
		p("process uses and the page cache it touches (its binary's pages among them), reclaims page cache when the charge reaches")
		p("the limit (counted as reclaims), and kills the process when nothing is left to reclaim; a killed leader fails the bench.")
	}
	if m.copies > 0 {
		p("Past the first %d, %d custom resources were written straight into etcd, as copies of the first of their kind with", m.settings.throughAPI, m.copies)
		p("their own names and UIDs (the Services without a cluster IP or node port, which the operator does not hold).")
	}
	p("")
	p("| stored | manager | ready | reconciled | live heap | peak RSS | peak charge, reclaims | applies at start |")
	p("|---|---|---|---|---|---|---|---|")
	row := func(what, manager string, l *leaderStart) {
		if l == nil {
			return
		}
		charge := "no cgroup"
		if l.charge != nil {
			charge = fmt.Sprintf("%s, %d", mib(l.charge.peak), l.charge.reclaims)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %.0f |", what, manager, l.ready.Round(100*time.Millisecond), l.reconciled.Round(100*time.Millisecond),
			mib(l.heap), mib(l.peakRSS), charge, l.applied)
	}
	for _, step := range m.steps {
		row(step.what, "this tree", step.ours)
		row(step.what, "baseline", step.baseline)
	}
	p("")
	// The slope of the live heap per custom resource, between the steps of plain custom resources.
	var plain []memoryStep
	for _, step := range m.steps {
		if strings.HasSuffix(step.what, " custom resources") || step.objects == 0 {
			plain = append(plain, step)
		}
	}
	slope := func(pick func(memoryStep) *leaderStart) (float64, uint64, bool) {
		if len(plain) < 2 {
			return 0, 0, false
		}
		first, last := plain[0], plain[len(plain)-1]
		if pick(first) == nil || pick(last) == nil || last.objects == first.objects {
			return 0, 0, false
		}
		perObject := (float64(pick(last).heap) - float64(pick(first).heap)) / float64(last.objects-first.objects)
		return perObject, pick(first).heap, true
	}
	for _, c := range []struct {
		name string
		pick func(memoryStep) *leaderStart
	}{{"this tree", func(s memoryStep) *leaderStart { return s.ours }}, {"baseline", func(s memoryStep) *leaderStart { return s.baseline }}} {
		perObject, empty, ok := slope(c.pick)
		if !ok {
			continue
		}
		p("%s: %.2f KiB of live heap per custom resource with its children (from %d to %d stored); projected to 100,000: %s.",
			c.name, perObject/1024, plain[0].objects, plain[len(plain)-1].objects, mib(empty+uint64(perObject*100000)))
	}
	if len(plain) >= 2 {
		if ours, _, ok := slope(func(s memoryStep) *leaderStart { return s.ours }); ok {
			if base, _, ok := slope(func(s memoryStep) *leaderStart { return s.baseline }); ok && ours > 0 {
				p("Baseline ÷ this tree, heap per custom resource: %.2f×.", base/ours)
			}
		}
	}
	p("")
}

func (r *report) startTable(p func(string, ...any)) {
	var starts trials
	for _, d := range r.startups {
		starts = append(starts, milliseconds(d))
	}
	p("## 5. Start and certificate swap")
	p("")
	if len(r.certSwap) == 0 {
		p("| exec to webhook serving (%d starts) |", len(starts))
		p("|---|")
		p("| %s |", starts.ms())
		p("")
		return
	}
	p("| exec to webhook serving (%d starts) | new certificate written to served (%d swaps) |", len(starts), len(r.certSwap))
	p("|---|---|")
	p("| %s | %s |", starts.ms(), r.certSwap.ms())
	p("")
}

func (r *report) hostileTables(p func(string, ...any)) {
	h := r.hostile
	mib := func(n uint64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
	row := func(what string, m processMemory) {
		p("| %s | %s | %s | %s | %s |", what, mib(m.peakRSS), mib(m.rss), mib(m.heap), m.converged.Round(100*time.Millisecond))
	}
	p("## 6. Hostile input")
	p("")
	objects := "no custom resources"
	if r.memory != nil && len(r.memory.steps) > 0 {
		objects = fmt.Sprintf("the %d custom resources of section 4", r.memory.steps[len(r.memory.steps)-1].objects)
	}
	p("With %s stored, %d Deployments carrying the operator's managed-by label, each with a %d KiB env value (%s of JSON),",
		objects, h.settings.deployments, h.settings.envBytes>>10, mib(h.storedBytes))
	p("as anyone who may create a Deployment can make them. The manager's limit in config/manager is 512 MiB. Peak RSS is VmHWM,")
	p("the process's peak since it started; converged is how long until a new Welcome got its Deployment (for a new leader,")
	p("from its exec: caches listed and synced).")
	p("")
	p("| leader | peak RSS | RSS | live heap | converged |")
	p("|---|---|---|---|---|")
	row("running, before the Deployments", h.before)
	row("running, the Deployments cached", h.running)
	if h.baseline != nil {
		row("baseline manager, started with them stored", *h.baseline)
	}
	row("new leader, started with them stored", h.restart)
	if h.baseline != nil && h.restart.peakRSS > 0 {
		p("")
		p("Peak RSS of a new leader, baseline ÷ this tree: %.1f×.", float64(h.baseline.peakRSS)/float64(h.restart.peakRSS))
	}
	f := h.flood
	p("")
	p("Then a flood of Welcome creates under new names (generateName), each refused by the validating webhook, at %d a second",
		h.settings.floodRate)
	p("for %s, by a tenant who may create Welcomes in one namespace: %d sent (%.0f a second), %d refused by the webhook,",
		f.elapsed.Round(time.Second), f.sent, float64(f.sent)/f.elapsed.Seconds(), f.refused)
	p("%d turned away by kube-apiserver's priority and fairness (429), %d otherwise failed, %d not sent because the clients fell behind.",
		f.throttled, f.failed, f.dropped)
	p("Refusal Events in the namespace afterwards: %d; refusals recorded as no Event: %.0f. Peak RSS is sampled every second during the flood.", f.events, f.suppressed)
	if f.restarts > 0 {
		p("The manager exited %d times during the flood and was started again, as kubelet restarts a container (its log says why;", f.restarts)
		p("on a saturated machine, a Lease that kube-apiserver did not renew in time). The Events are every process's; the")
		p("refusals recorded as no Event are the last process's.")
	}
	p("")
	p("| | peak RSS | RSS | live heap |")
	p("|---|---|---|---|")
	p("| before the flood | | %s | %s |", mib(f.before.rss), mib(f.before.heap))
	p("| after the flood | %s | %s | %s |", mib(f.after.peakRSS), mib(f.after.rss), mib(f.after.heap))
	p("")
}

func (r *report) conversionTables(p func(string, ...any)) {
	c := r.conversion
	s := c.settings
	p("## 7. Conversion")
	p("")
	p("%d Welcomes (conversion Webhook: the manager's /convert) and %d Memcacheds (conversion None, the baseline), stored at v1,", s.perKind, s.perKind)
	p("read and written at v1 and at v1alpha1 with the controllers idle; %d rounds, the variants in a rotated order. Per round and", s.rounds)
	p("variant: %d unpaged LISTs of the namespace, %d GETs, %d creates and %d merge patches of the spec, one at a time; a cell is", s.lists, s.gets, s.writes, s.writes)
	p("the median over rounds of each round's p50. \"/convert per request\" is the manager's /convert calls over the requests.")
	p("")
	p("| request | Welcome v1 | Welcome v1alpha1 | ÷ v1 | /convert per request, v1 / v1alpha1 | Memcached v1 | Memcached v1alpha1 | ÷ v1 |")
	p("|---|---|---|---|---|---|---|---|")
	for _, request := range []string{"LIST", "GET", "create", "patch"} {
		cell := func(v conversionVariant) *conversionCell { return c.cells[request][v.name()] }
		wv1, wa, mv1, ma := cell(welcomeCRD.at("v1")), cell(welcomeCRD.at("v1alpha1")), cell(memcachedCRD.at("v1")), cell(memcachedCRD.at("v1alpha1"))
		if wv1 == nil || wa == nil || mv1 == nil || ma == nil {
			continue
		}
		label := request
		if request == "LIST" {
			label = fmt.Sprintf("LIST of %d", s.perKind)
		}
		p("| %s | %s | %s | %s | %s / %s | %s | %s | %s |", label, wv1.p50.ms(), wa.p50.ms(), ratio(wa.p50, wv1.p50).x(),
			wv1.calls.format("", 2), wa.calls.format("", 2), mv1.p50.ms(), ma.p50.ms(), ratio(ma.p50, mv1.p50).x())
	}
	p("")
	p("The leader's storage migration: the CRD's storage version changed, until its status.storedVersions is that version")
	p("alone; %d times each way, the controllers idle (they reconciled the objects before).", s.migrations)
	p("")
	p("| objects | to | seconds | objects rewritten | /convert calls |")
	p("|---|---|---|---|---|")
	for _, kind := range []string{"Welcome", "Memcached"} {
		for _, to := range []string{"v1alpha1", "v1"} {
			if mr := c.migrations[kind+" to "+to]; mr != nil {
				rewritten := mr.rewritten.format("", 0)
				for _, result := range slices.Sorted(maps.Keys(mr.otherResults)) {
					if n := mr.otherResults[result]; n > 0 {
						rewritten += fmt.Sprintf("; %s: %.0f in all", result, n)
					}
				}
				p("| %d %ss | %s | %s | %s | %s |", s.perKind, kind, to, mr.seconds.format(" s", 2), rewritten, mr.calls.format("", 0))
			}
		}
	}
	p("")
	p("An unpaged LIST of %d Welcomes stored at v1: at each version as kube-apiserver's watch caches are, and at v1alpha1 just", s.bigList)
	p("after a change of the CRD's spec (its conversion caBundle written again, as a CA injection does), after which kube-apiserver")
	p("builds a new watch cache per served version; %d times each, the variants in a rotated order. Until answered: from the", s.rounds)
	p("LIST (or the CRD's change) until the LIST's answer; until settled: until the new v1alpha1 watch cache made a /convert call")
	p("for every Welcome; the manager's heap in use (go_memstats_heap_inuse_bytes every 20 ms) at its peak meanwhile, above")
	p("where it was after a collection before.")
	p("")
	p("| LIST | until answered | until settled | /convert calls | manager heap added at the peak |")
	p("|---|---|---|---|---|")
	for _, variant := range bigListVariants {
		if br := c.bigLists[variant]; br != nil {
			settled := "–"
			if variant == bigListCold {
				settled = br.settled.format(" s", 2)
			}
			p("| %s | %s | %s | %s | %s |", variant, br.seconds.format(" s", 2), settled, br.calls.format("", 0), br.heap.format(" MiB", 1))
		}
	}
	p("")
}
