package main

import (
	"github.com/convcache/convcache/remote/internal/redistest"

	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/remote"
)

var (
	shapes    = flag.Int("shapes", 200, "convolution shapes in the simulated model")
	benchMs   = flag.Int("bench-ms", 20, "simulated benchmark time per shape, in ms")
	rtt       = flag.Duration("rtt", time.Millisecond, "extra round-trip delay of the proxied runs (0: loopback only)")
	serverURL = flag.String("url", "", "use this Redis server (default: start redis-server on a free port)")
	serverBin = flag.String("redis-server", "", "the redis-server binary (default: found on PATH)")
	hits      = flag.Int("hits", 2_000_000, "lookups per local-hit measurement")
	timeout   = flag.Duration("timeout", remote.DefaultTimeout, "the tier's deadline")
	withMAC   = flag.Bool("mac", true, "the nodes share a record MAC key, as a cluster should (false: none, so remote hits stay in memory)")
)

// macKey is the nodes' shared record MAC key (with -mac).
func macKey() []byte {
	if *withMAC {
		return []byte("clusterbench's record key, 32 B")
	}
	return nil
}

const nodes = 4

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "clusterbench:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "clusterbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, version := "", "external"
	if *serverURL == "" {
		bin := *serverBin
		if bin == "" {
			if bin, err = redistest.Binary(); err != nil {
				return fmt.Errorf("%v, or pass -url", err)
			}
		}
		srv := &redistest.Server{Bin: bin, Dir: dir}
		if err := srv.Start(); err != nil {
			return err
		}
		defer srv.Stop()
		addr, version = srv.Addr(), srv.Version()
	} else {
		o, err := redis.ParseURL(*serverURL)
		if err != nil {
			return err
		}
		addr = o.Addr
	}
	admin := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	defer admin.Close()
	ctx := context.Background()
	if err := admin.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %v", addr, err)
	}

	fmt.Printf("## convcache cluster tier: %d nodes, one Redis\n\n", nodes)
	fmt.Printf("redis-server %s on loopback; %d shapes; each algorithm selection (a simulated cuDNN benchmark) takes %d ms; remote deadline %v; GOMAXPROCS %d\n\n",
		version, *shapes, *benchMs, *timeout, runtimeProcs())

	delays := []time.Duration{0}
	if *rtt > 0 {
		delays = append(delays, *rtt)
	}
	fmt.Println("| start | added RTT | node | algorithm selection | speed-up vs cold | builds | remote hits |")
	fmt.Println("|---|---|---|---:|---:|---:|---:|")
	run := 0
	for _, d := range delays {
		for _, simultaneous := range []bool{false, true} {
			run++
			target := addr
			if d > 0 {
				p, err := redistest.NewDelayProxy(addr, d)
				if err != nil {
					return err
				}
				defer p.Close()
				target = p.Addr()
			}
			admin.FlushAll(ctx)
			res, err := coldStart(filepath.Join(dir, fmt.Sprintf("run%d", run)), "redis://"+target+"/0", simultaneous)
			if err != nil {
				return err
			}
			start := "staggered"
			if simultaneous {
				start = "simultaneous"
			}
			cold := res[0].took
			totalBuilds := 0
			for i, r := range res {
				label := fmt.Sprintf("node %d", i+1)
				if !simultaneous {
					if i == 0 {
						label += " (first, cold)"
					} else {
						label += " (after node 1)"
					}
				}
				totalBuilds += int(r.builds)
				fmt.Printf("| %s | %v | %s | %s | %s | %d | %d |\n", start, d, label, ms(r.took),
					speedup(cold, r.took, i == 0 && !simultaneous), r.builds, r.remoteHits)
			}
			fmt.Printf("| %s | %v | cluster | | | **%d** (without the tier: %d) | |\n", start, d, totalBuilds, nodes**shapes)
		}
	}

	fmt.Println()
	if err := localHits(filepath.Join(dir, "hits"), "redis://"+addr+"/0", admin); err != nil {
		return err
	}
	if *v8Build != "" {
		return twoNodesV8(filepath.Join(dir, "v8"), addr, admin)
	}
	return nil
}

type nodeResult struct {
	took       time.Duration
	builds     uint64
	remoteHits uint64
}

func key(i int) []byte {
	// Shaped like PyTorch's 104-byte ConvolutionParams.
	k := make([]byte, 104)
	binary.LittleEndian.PutUint32(k[8:], uint32(1+i%64))
	binary.LittleEndian.PutUint32(k[12:], uint32(3+i%512))
	binary.LittleEndian.PutUint32(k[88:], uint32(i))
	return k
}

// builder simulates cudnnFind*: a fixed benchmark time, then a 48-byte
// algorithm record.
func builder(i int) cache.BuildFunc {
	return func(dst []byte) (int, error) {
		time.Sleep(time.Duration(*benchMs) * time.Millisecond)
		binary.LittleEndian.PutUint32(dst, uint32(i%8))
		binary.LittleEndian.PutUint64(dst[16:], uint64(i)*4096)
		return 48, nil
	}
}

// node selects algorithms for every shape, as a framework's first
// iteration does, and reports the time it took.
func node(path, url string, start <-chan struct{}) (nodeResult, error) {
	r, err := remote.New(remote.Options{URL: url, Timeout: *timeout, MACKey: macKey()})
	if err != nil {
		return nodeResult{}, err
	}
	c, err := cache.Open(path, &cache.Options{Scope: "sm_90 cudnn 9.1 (simulated)", Remote: r})
	if err != nil {
		return nodeResult{}, err
	}
	defer c.Close()
	<-start
	dst := make([]byte, 64)
	t0 := time.Now()
	for i := 0; i < *shapes; i++ {
		if _, _, err := c.GetOrCreate(key(i), dst, builder(i)); err != nil {
			return nodeResult{}, err
		}
	}
	took := time.Since(t0)
	if err := c.Save(); err != nil {
		return nodeResult{}, err
	}
	st := c.Stats()
	return nodeResult{took, st.Builds, st.Remote.Hits}, nil
}

func coldStart(dir, url string, simultaneous bool) ([]nodeResult, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	res := make([]nodeResult, nodes)
	errs := make([]error, nodes)
	runNodes := func(from, to int) {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i], errs[i] = node(filepath.Join(dir, fmt.Sprintf("node%d.ccdb", i+1)), url, start)
			}()
		}
		time.Sleep(50 * time.Millisecond) // all open, then all start
		close(start)
		wg.Wait()
	}
	if simultaneous {
		runNodes(0, nodes)
	} else {
		runNodes(0, 1)
		runNodes(1, nodes)
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// localHits measures a hit with and without the tier, and counts the
// commands the server ran during the hits with the tier.
func localHits(dir, url string, admin *redis.Client) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(dir, "hits.ccdb")
	{ // fill a file
		c, err := cache.Open(path, &cache.Options{Scope: "s"})
		if err != nil {
			return err
		}
		for i := 0; i < *shapes; i++ {
			c.Insert(key(i), make([]byte, 48))
		}
		c.Close()
	}
	measure := func(withTier bool) (time.Duration, int, error) {
		var opts cache.Options
		opts.Scope = "s"
		if withTier {
			r, err := remote.New(remote.Options{URL: url, Timeout: *timeout, MACKey: macKey()})
			if err != nil {
				return 0, 0, err
			}
			opts.Remote = r
		}
		c, err := cache.Open(path, &opts)
		if err != nil {
			return 0, 0, err
		}
		defer c.Close()
		keys := make([][]byte, *shapes)
		for i := range keys {
			keys[i] = key(i)
		}
		dst := make([]byte, 64)
		for i := 0; i < 10000; i++ { // warm up
			c.Find(keys[i%len(keys)], dst)
		}
		before, err := commandCount(admin)
		if err != nil {
			return 0, 0, err
		}
		t0 := time.Now()
		for i := 0; i < *hits; i++ {
			if _, ok, _ := c.Find(keys[i%len(keys)], dst); !ok {
				return 0, 0, fmt.Errorf("miss on a stored key")
			}
		}
		took := time.Since(t0)
		after, err := commandCount(admin)
		if err != nil {
			return 0, 0, err
		}
		return took / time.Duration(*hits), after - before, nil
	}
	var off, on []time.Duration
	commands := 0
	for rep := 0; rep < 5; rep++ {
		d, _, err := measure(false)
		if err != nil {
			return err
		}
		off = append(off, d)
		d, n, err := measure(true)
		if err != nil {
			return err
		}
		on = append(on, d)
		commands += n
	}
	mOff, mOn := median(off), median(on)
	fmt.Printf("### Local hit latency (%d lookups x 5 runs, median; the key is in the local file)\n\n", *hits)
	fmt.Println("| tier | ns per hit | added | Redis commands during the hits |")
	fmt.Println("|---|---:|---:|---:|")
	fmt.Printf("| off | %.1f | | |\n", float64(mOff.Nanoseconds()))
	fmt.Printf("| on | %.1f | %+.1f | %d |\n", float64(mOn.Nanoseconds()), float64(mOn.Nanoseconds()-mOff.Nanoseconds()), commands)
	if commands != 0 {
		return fmt.Errorf("local hits sent %d commands to Redis", commands)
	}
	return nil
}

// commandCount is the total of INFO commandstats calls, less INFO itself.
func commandCount(c *redis.Client) (int, error) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return 0, err
	}
	total := 0
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "cmdstat_"), ":calls=")
		if !ok || name == "info" {
			continue
		}
		n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		total += n
	}
	return total, nil
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

func speedup(cold, d time.Duration, isCold bool) string {
	if isCold || d <= 0 {
		return "1x"
	}
	return fmt.Sprintf("%.0fx", float64(cold)/float64(d))
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
