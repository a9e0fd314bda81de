// Command yunikorn-go runs pyscheduler's scheduling benchmark shapes on YuniKorn's Go core
// (github.com/apache/yunikorn-core, the version go.mod pins), so that `python -m benchmarks
// yunikorn-go` can put both cores' rates side by side from one run on one machine.
//
// The workload mirrors benchmarks/scheduling.py: YuniKorn's BenchmarkScheduling shape (root.a
// and root.b, two applications) or the many-queues shape (root.p<i>.l<j> leaves, applications of
// 10 asks round-robin over the leaves, asks round-robin over the applications), asks of memory
// 10 and vcore 1, nodes of asks/nodes+1 asks' room, the given node sort policy, events on (the
// default), no REST service. The clock starts with every ask pending, as in
// benchmarks/scheduling.py: the asks are submitted before any node (nothing can be placed), and
// the clock starts when the nodes are submitted (their registration, a few milliseconds, is
// timed too); it stops when the RM has been told of every allocation. (YuniKorn's own
// BenchmarkScheduling starts it when the asks' submission returns, nodes already in, while the
// core still takes the asks in.) One JSON line on stdout.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/yunikorn-core/pkg/entrypoint"
	"github.com/apache/yunikorn-core/pkg/log"
	"github.com/apache/yunikorn-core/pkg/mock"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

const rmID = "bench"

// countingRM counts new allocations and closes done at the target.
type countingRM struct {
	mock.ResourceManagerCallback
	target    int64
	allocated atomic.Int64
	rejected  atomic.Int64
	apps      atomic.Int64
	done      chan struct{}
}

func (m *countingRM) UpdateAllocation(response *si.AllocationResponse) error {
	m.rejected.Add(int64(len(response.RejectedAllocations)))
	if n := m.allocated.Add(int64(len(response.New))); n >= m.target && len(response.New) > 0 && n-int64(len(response.New)) < m.target {
		close(m.done)
	}
	return nil
}

func (m *countingRM) UpdateApplication(response *si.ApplicationResponse) error {
	m.apps.Add(int64(len(response.Accepted)))
	return nil
}

func config(shape, policy string, parents, leaves int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "partitions:\n  - name: default\n    nodesortpolicy: {type: %s}\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n", policy)
	if shape == "yunikorn" {
		b.WriteString("          - name: a\n          - name: b\n")
		return b.String()
	}
	for p := 0; p < parents; p++ {
		fmt.Fprintf(&b, "          - name: p%d\n            queues:\n", p)
		for l := 0; l < leaves; l++ {
			fmt.Fprintf(&b, "              - name: l%d\n", l)
		}
	}
	return b.String()
}

func quantity(memory, vcore int64) *si.Resource {
	return &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: memory}, "vcore": {Value: vcore}}}
}

func waitFor(what string, timeout time.Duration, ok func() bool) {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			fail(fmt.Errorf("timed out waiting for %s", what))
		}
		time.Sleep(time.Millisecond)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "yunikorn-go:", err)
	os.Exit(1)
}

func main() {
	shape := flag.String("shape", "many-queues", "yunikorn or many-queues")
	policy := flag.String("policy", "fair", "node sort policy: fair or binpacking")
	nodes := flag.Int("nodes", 1000, "nodes")
	asks := flag.Int("asks", 10000, "asks (all allocated)")
	parents := flag.Int("parents", 10, "many-queues: parent queues")
	leaves := flag.Int("leaves", 10, "many-queues: leaves per parent")
	perApp := flag.Int("asks-per-app", 10, "many-queues: asks per application")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after")
	flag.Parse()
	if (*shape != "yunikorn" && *shape != "many-queues") || *nodes < 1 || *asks < 1 || *parents < 1 || *leaves < 1 || *perApp < 1 {
		fail(fmt.Errorf("bad arguments: shape %q, nodes %d, asks %d", *shape, *nodes, *asks))
	}

	log.UpdateLoggingConfig(map[string]string{"log.level": "WARN"})
	// Never stopped: the process exits after its one run (stopping logs a warning and a stack
	// per application it fails).
	services := entrypoint.StartAllServicesWithParams(false, false)
	proxy := services.RMProxy
	rm := &countingRM{target: int64(*asks), done: make(chan struct{})}
	if _, err := proxy.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: rmID, PolicyGroup: "default", Version: "0.0.2",
		Config: config(*shape, *policy, *parents, *leaves), ExtraConfig: map[string]string{"log.level": "WARN"},
	}, rm); err != nil {
		fail(err)
	}

	var appOf func(k int) string
	var apps []*si.AddApplicationRequest
	ugi := &si.UserGroupInformation{User: "bench"}
	if *shape == "yunikorn" {
		apps = []*si.AddApplicationRequest{{ApplicationID: "app-a", QueueName: "root.a", Ugi: ugi}, {ApplicationID: "app-b", QueueName: "root.b", Ugi: ugi}}
		appOf = func(k int) string { return map[bool]string{true: "app-a", false: "app-b"}[k%2 == 0] }
	} else {
		count := max(1, *asks / *perApp)
		total := *parents * *leaves
		for i := 0; i < count; i++ {
			leaf := i % total
			apps = append(apps, &si.AddApplicationRequest{ApplicationID: fmt.Sprintf("app-%04d", i),
				QueueName: fmt.Sprintf("root.p%d.l%d", leaf / *leaves, leaf%*leaves), Ugi: ugi})
		}
		appOf = func(k int) string { return fmt.Sprintf("app-%04d", k%count) }
	}
	if err := proxy.UpdateApplication(&si.ApplicationRequest{RmID: rmID, New: apps}); err != nil {
		fail(err)
	}
	waitFor("applications", time.Minute, func() bool { return rm.apps.Load() >= int64(len(apps)) })

	allocations := make([]*si.Allocation, *asks)
	for k := range allocations {
		allocations[k] = &si.Allocation{AllocationKey: fmt.Sprintf("ask-%05d", k), ApplicationID: appOf(k),
			ResourcePerAlloc: quantity(10, 1)}
	}
	if err := proxy.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Allocations: allocations}); err != nil {
		fail(err)
	}
	// Every ask pending before the clock starts, as benchmarks/scheduling.py has it: the asks
	// go in while there is no node (nothing can be placed), the clock starts with the nodes.
	partition := services.Scheduler.GetClusterContext().GetPartition("[" + rmID + "]default")
	if partition == nil {
		fail(fmt.Errorf("no partition [%s]default", rmID))
	}
	root := partition.GetQueue("root")
	waitFor("asks pending", time.Minute, func() bool {
		pending := root.GetPendingResource()
		return pending != nil && int(pending.Resources["vcore"]) >= *asks
	})
	perNode := int64(*asks / *nodes + 1)
	infos := make([]*si.NodeInfo, *nodes)
	for i := range infos {
		infos[i] = &si.NodeInfo{NodeID: fmt.Sprintf("node-%05d", i), Attributes: map[string]string{},
			SchedulableResource: quantity(10*perNode, perNode), Action: si.NodeInfo_CREATE}
	}
	started := time.Now()
	if err := proxy.UpdateNode(&si.NodeRequest{RmID: rmID, Nodes: infos}); err != nil {
		fail(err)
	}
	result := map[string]any{"shape": *shape, "policy": *policy, "nodes": *nodes, "asks": *asks}
	select {
	case <-rm.done:
		seconds := time.Since(started).Seconds()
		result["seconds"], result["rate"] = seconds, float64(*asks)/seconds
	case <-time.After(*timeout):
		result["error"] = fmt.Sprintf("%d of %d allocations after %s", rm.allocated.Load(), *asks, *timeout)
	}
	result["allocations"], result["rejected"] = rm.allocated.Load(), rm.rejected.Load()
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		fail(err)
	}
}
