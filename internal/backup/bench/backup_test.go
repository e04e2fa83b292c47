//go:build bench

package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rediskube/redis-operator/internal/backup/store"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
	"github.com/rediskube/redis-operator/internal/restore"
	"github.com/rediskube/redis-operator/internal/s3test"
	"github.com/rediskube/redis-operator/internal/snapshot"
)

// The targets (#22). They are reported, not asserted: a benchmark measures.
const (
	backupTarget  = 0.8 // ours ÷ redis-cli --rdb, throughput: at least
	restoreTarget = 1.5 // ours ÷ plain redis-server, time to loaded: at most
)

// The defaults: 1,000,000 values of 100 bytes, three rounds of each side.
const (
	defaultKeys   = 1_000_000
	defaultRounds = 5
	valueSize     = 100
)

// Results is what bench/results/backup-latest.json holds (backup-partial.json for another N).
type Results struct {
	Keys        int     `json:"keys"`
	ValueBytes  int     `json:"value_bytes"`
	Rounds      int     `json:"rounds"`
	RDBBytes    int64   `json:"rdb_bytes"`
	Machine     Machine `json:"machine"`
	Backup      Backup  `json:"backup"`
	Restore     Restore `json:"restore"`
	Memory      Memory  `json:"memory"`
	StartedAt   string  `json:"started_at"`
	WallSeconds float64 `json:"wall_seconds"`
}

// Machine is where the figures were taken.
type Machine struct {
	CPUs         int    `json:"cpus"`
	CPUModel     string `json:"cpu_model"`
	GoVersion    string `json:"go_version"`
	RedisVersion string `json:"redis_version"`
	// LoadAverage is /proc/loadavg's 1-minute figure at the start and at the end: other work on
	// the machine shows in it.
	LoadAverageStart float64 `json:"load_average_start"`
	LoadAverageEnd   float64 `json:"load_average_end"`
}

// Backup: seconds of each round, in the order run (the three sides alternate), and the MB/s
// (10^6 bytes) of each side's median round.
type Backup struct {
	RedisCLISeconds []float64 `json:"redis_cli_rdb_seconds"`
	OursFileSeconds []float64 `json:"ours_to_file_seconds"`
	OursS3Seconds   []float64 `json:"ours_to_s3_seconds"`
	// OursS3TailSeconds is, of each S3 round, the time after the snapshot's last byte was read:
	// the last part's upload, the completion of the multipart upload (the store assembles the
	// object) and the Stat that checks its size.
	OursS3TailSeconds    []float64 `json:"ours_to_s3_after_last_byte_seconds"`
	RedisCLIMBps         float64   `json:"redis_cli_rdb_mb_per_s"`
	OursFileMBps         float64   `json:"ours_to_file_mb_per_s"`
	OursS3MBps           float64   `json:"ours_to_s3_mb_per_s"`
	OursS3OverRedisCLI   float64   `json:"ours_to_s3_over_redis_cli"`
	OursFileOverRedisCLI float64   `json:"ours_to_file_over_redis_cli"`
	Target               float64   `json:"target_at_least"`
	S3MeetsTarget        bool      `json:"ours_to_s3_meets_target"`
}

// Restore: seconds from start to a server that answers PING with loading:0 and DBSIZE == keys.
// Ours includes the restore subcommand (OursPlaceSeconds of it) before redis-server starts.
type Restore struct {
	PlainSeconds      []float64 `json:"plain_seconds"`
	OursSeconds       []float64 `json:"ours_seconds"`
	OursPlaceSeconds  []float64 `json:"ours_place_seconds"`
	PlainMedian       float64   `json:"plain_median_seconds"`
	OursMedian        float64   `json:"ours_median_seconds"`
	OursOverPlain     float64   `json:"ours_over_plain"`
	Target            float64   `json:"target_at_most"`
	OursMeetsTarget   bool      `json:"ours_meets_target"`
	LoadedKeysChecked int64     `json:"loaded_keys_checked"`
}

// Memory: the test process's heap in use and resident set, sampled every 20 ms while our
// streams ran, at keys and at twice as many.
type Memory struct {
	SampleMillis int         `json:"sample_ms"`
	Runs         []MemoryRun `json:"runs"`
	// HeapGrowth is the largest heap in use at 2N ÷ at N; 1 is flat.
	HeapGrowth     float64 `json:"heap_growth_2n_over_n"`
	LiveHeapGrowth float64 `json:"live_heap_growth_2n_over_n"`
	RSSGrowth      float64 `json:"rss_growth_2n_over_n"`
}

// MemoryRun is the peak over the streams of one data set.
type MemoryRun struct {
	Keys            int    `json:"keys"`
	RDBBytes        int64  `json:"rdb_bytes"`
	Streams         int    `json:"streams"`
	HeapInuseBefore uint64 `json:"heap_inuse_before_bytes"`
	HeapInuseMax    uint64 `json:"heap_inuse_max_bytes"`
	// LiveHeapMax is the largest heap marked live by a garbage collection during the streams
	// (runtime/metrics /gc/heap/live:bytes): what the streams hold, without the garbage not
	// yet collected that HeapInuse also counts.
	LiveHeapMax       uint64  `json:"live_heap_max_bytes"`
	RSSMax            uint64  `json:"rss_max_bytes"`
	OursS3MBps        float64 `json:"ours_to_s3_mb_per_s"`
	HeapInuseMaxToRDB float64 `json:"heap_inuse_max_over_rdb"`
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestBackupBenchmark loads BENCH_BACKUP_KEYS (1,000,000) values of 100 bytes into a local
// redis-server and measures, BENCH_BACKUP_ROUNDS (3) rounds of each side, alternating:
//
//   - backup: `redis-cli --rdb FILE` against snapshot.Stream into a file and, as a RedisBackup
//     does, into the real versitygw S3 server through store.S3.PutFrom (then Stat);
//   - restore: a plain redis-server starting on the snapshot from disk against the restore
//     subcommand placing the stored object into an empty data dir and redis-server starting on
//     it, both until PING answers, INFO says loading:0 and DBSIZE is the number of keys;
//   - memory: the heap and resident set of this process while our streams run, at N keys and
//     at 2N.
//
// It writes bench/results/backup-latest.json (backup-partial.json for another number of keys).
func TestBackupBenchmark(t *testing.T) {
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: install redis-server and redis-tools (make packages)", tool)
		}
	}
	keys := envInt(t, "BENCH_BACKUP_KEYS", defaultKeys)
	rounds := envInt(t, "BENCH_BACKUP_ROUNDS", defaultRounds)
	began := time.Now()
	ctx := t.Context()
	r := Results{Keys: keys, ValueBytes: valueSize, Rounds: rounds, Machine: machine(t), StartedAt: began.UTC().Format(time.RFC3339)}

	// The source: rdbcompression off, so that the snapshot is the data's size (DEBUG POPULATE's
	// padded values would otherwise shrink to a few bytes each) and the bytes moved are real.
	// Both sides read the same server with its default diskless sync.
	src := redistest.StartServer(t, redistest.ServerOptions{Config: []string{"enable-debug-command yes", "rdbcompression no"}})
	client := goredis.NewClient(&goredis.Options{Addr: src.Addr(), DisableIdentity: true, Protocol: 2, ReadTimeout: 5 * time.Minute})
	t.Cleanup(func() { _ = client.Close() })
	populate(ctx, t, client, keys)
	ep := src.Endpoint(redis.Auth{})

	s3 := s3test.Start(t, s3test.Options{})
	st, err := store.NewS3(store.S3Config{Endpoint: "http://" + s3.Endpoint, Bucket: s3.Bucket, Region: s3test.Region,
		ForcePathStyle: true, AccessKeyID: s3.AccessKey, SecretAccessKey: s3.SecretKey})
	if err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	cliFile := filepath.Join(work, "redis-cli.rdb")
	oursFile := filepath.Join(work, "ours.rdb")
	key := "backups/bench/bench/bench-0.rdb"
	mem := newPeak()
	var stored snapshot.Info
	for i := range rounds {
		d, size := redisCLIRDB(ctx, t, src, cliFile)
		r.Backup.RedisCLISeconds = append(r.Backup.RedisCLISeconds, d.Seconds())
		d2, info := streamToFile(ctx, t, ep, oursFile, mem)
		r.Backup.OursFileSeconds = append(r.Backup.OursFileSeconds, d2.Seconds())
		d3, tail, info3 := streamToS3(ctx, t, ep, st, key, mem)
		r.Backup.OursS3Seconds = append(r.Backup.OursS3Seconds, d3.Seconds())
		r.Backup.OursS3TailSeconds = append(r.Backup.OursS3TailSeconds, tail.Seconds())
		stored = info3
		r.RDBBytes = info3.Bytes
		t.Logf("round %d: redis-cli %d B in %.2f s; ours to a file %d B in %.2f s; ours to S3 %d B in %.2f s",
			i+1, size, d.Seconds(), info.Bytes, d2.Seconds(), info3.Bytes, d3.Seconds())
		// The next round writes anew; the last round's files stay for the restore.
		if i < rounds-1 {
			_ = os.Remove(cliFile)
			_ = os.Remove(oursFile)
		}
	}
	b := &r.Backup
	b.RedisCLIMBps = mbps(r.RDBBytes, median(b.RedisCLISeconds))
	b.OursFileMBps = mbps(r.RDBBytes, median(b.OursFileSeconds))
	b.OursS3MBps = mbps(r.RDBBytes, median(b.OursS3Seconds))
	b.OursS3OverRedisCLI = b.OursS3MBps / b.RedisCLIMBps
	b.OursFileOverRedisCLI = b.OursFileMBps / b.RedisCLIMBps
	b.Target = backupTarget
	b.S3MeetsTarget = b.OursS3OverRedisCLI >= backupTarget
	atN := mem.run(keys, r.RDBBytes, 2*rounds, b.OursS3MBps)

	// Restore: the plain server loads the very bytes our backup stored, put on disk untimed.
	_ = os.Remove(cliFile)
	_ = os.Remove(oursFile)
	plainRDB := filepath.Join(work, "stored.rdb")
	download(ctx, t, st, key, plainRDB)
	for i := range rounds {
		plain := timePlainLoad(ctx, t, plainRDB, keys)
		r.Restore.PlainSeconds = append(r.Restore.PlainSeconds, plain.Seconds())
		place, total := timeOurRestore(ctx, t, s3, key, stored, keys)
		r.Restore.OursSeconds = append(r.Restore.OursSeconds, total.Seconds())
		r.Restore.OursPlaceSeconds = append(r.Restore.OursPlaceSeconds, place.Seconds())
		t.Logf("restore round %d: plain %.2f s; ours %.2f s (%.2f s placing the object)", i+1, plain.Seconds(), total.Seconds(), place.Seconds())
	}
	rs := &r.Restore
	rs.PlainMedian = median(rs.PlainSeconds)
	rs.OursMedian = median(rs.OursSeconds)
	rs.OursOverPlain = rs.OursMedian / rs.PlainMedian
	rs.Target = restoreTarget
	rs.OursMeetsTarget = rs.OursOverPlain <= restoreTarget
	rs.LoadedKeysChecked = int64(keys)
	_ = os.Remove(plainRDB)

	// Memory at 2N: twice the keys, the same streams to S3, one per round.
	populate(ctx, t, client, 2*keys)
	mem2 := newPeak()
	var secs []float64
	var bytes2 int64
	for range rounds {
		d, _, info := streamToS3(ctx, t, ep, st, key, mem2)
		secs = append(secs, d.Seconds())
		bytes2 = info.Bytes
	}
	at2N := mem2.run(2*keys, bytes2, rounds, mbps(bytes2, median(secs)))
	r.Memory = Memory{SampleMillis: int(sampleEvery / time.Millisecond), Runs: []MemoryRun{atN, at2N},
		HeapGrowth:     float64(at2N.HeapInuseMax) / float64(atN.HeapInuseMax),
		LiveHeapGrowth: float64(at2N.LiveHeapMax) / float64(atN.LiveHeapMax),
		RSSGrowth:      float64(at2N.RSSMax) / float64(atN.RSSMax)}

	r.WallSeconds = time.Since(began).Seconds()
	r.Machine.LoadAverageEnd = loadAverage()
	report(t, r)
}

// populate fills the server up to n keys of valueSize bytes (DEBUG POPULATE skips the keys
// already there) and checks DBSIZE.
func populate(ctx context.Context, t *testing.T, c *goredis.Client, n int) {
	t.Helper()
	if err := c.Do(ctx, "DEBUG", "POPULATE", n, "key", valueSize).Err(); err != nil {
		t.Fatalf("DEBUG POPULATE %d: %v", n, err)
	}
	got, err := c.DBSize(ctx).Result()
	if err != nil || got != int64(n) {
		t.Fatalf("DBSIZE %d, %v: want %d", got, err, n)
	}
}

// redisCLIRDB is the reference: redis-cli --rdb into a local file, the process's start included.
func redisCLIRDB(ctx context.Context, t *testing.T, src *redistest.Server, path string) (time.Duration, int64) {
	t.Helper()
	start := time.Now()
	out, err := exec.CommandContext(ctx, "redis-cli", "-h", src.Host, "-p", strconv.Itoa(src.Port), "--rdb", path).CombinedOutput()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("redis-cli --rdb: %v\n%s", err, out)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return d, fi.Size()
}

// streamToFile is ours, like for like with redis-cli: the snapshot into a local file, synced
// as redis-cli syncs its own.
func streamToFile(ctx context.Context, t *testing.T, ep redis.Endpoint, path string, mem *peak) (time.Duration, snapshot.Info) {
	t.Helper()
	mem.begin()
	start := time.Now()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := snapshot.Stream(ctx, ep, f, snapshot.Options{})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	d := time.Since(start)
	mem.end()
	if err != nil {
		t.Fatalf("snapshot into a file: %v", err)
	}
	return d, info
}

// streamToS3 is what a RedisBackup does for one node: the snapshot streamed into the store in
// parts, then the stored object's size checked; also the time after the snapshot's last byte.
func streamToS3(ctx context.Context, t *testing.T, ep redis.Endpoint, st *store.S3, key string, mem *peak) (total, tail time.Duration, _ snapshot.Info) {
	t.Helper()
	stopProfile := cpuProfile(t)
	defer stopProfile()
	cpuBefore := processCPU()
	mem.begin()
	start := time.Now()
	var info snapshot.Info
	var streamed time.Time
	obj, err := st.PutFrom(ctx, key, func(w io.Writer) error {
		var err error
		info, err = snapshot.Stream(ctx, ep, w, snapshot.Options{})
		streamed = time.Now()
		return err
	})
	if err == nil {
		var stat store.ObjectInfo
		if stat, err = st.Stat(ctx, key); err == nil && (stat.Size != info.Bytes || obj.Size != info.Bytes) {
			err = fmt.Errorf("stored %d (stat %d) bytes of a snapshot of %d", obj.Size, stat.Size, info.Bytes)
		}
	}
	end := time.Now()
	mem.end()
	if err != nil {
		t.Fatalf("snapshot into S3: %v", err)
	}
	logCPU(t, cpuBefore, end.Sub(start))
	return end.Sub(start), end.Sub(streamed), info
}

// s3Streams numbers the streams to S3, for the names of their CPU profiles.
var s3Streams int

// cpuProfile writes a CPU profile of this process while one stream to S3 runs when
// BENCH_CPUPROFILE=path is set, to path.N for the Nth stream (go tool pprof merges several):
// the operator's share of the backup path, without the file streams or the restore rounds.
func cpuProfile(t *testing.T) (stop func()) {
	t.Helper()
	path := os.Getenv("BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	s3Streams++
	f, err := os.Create(fmt.Sprintf("%s.%d", path, s3Streams))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// processCPU is the CPU seconds (user and system, with reaped children's) of this process and
// of its children by name (versitygw, redis-server with its forked snapshot children), from
// /proc; empty elsewhere.
func processCPU() map[string]float64 {
	out := map[string]float64{}
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		open, closing := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
		if open < 0 || closing < open {
			continue
		}
		name, f := string(b[open+1:closing]), strings.Fields(string(b[closing+1:]))
		// f[1] is the parent; f[11..14] utime, stime, cutime, cstime in clock ticks.
		if len(f) < 15 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); pid != self && ppid != self {
			continue
		}
		if pid == self {
			name = "operator (this process)"
		}
		for _, x := range f[11:15] {
			v, _ := strconv.ParseFloat(x, 64)
			out[name] += v / 100
		}
	}
	return out
}

// logCPU logs, with BENCH_CPUPROFILE set, the CPU each process used during one stream.
func logCPU(t *testing.T, before map[string]float64, wall time.Duration) {
	t.Helper()
	if os.Getenv("BENCH_CPUPROFILE") == "" {
		return
	}
	after := processCPU()
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(after)) {
		parts = append(parts, fmt.Sprintf("%s %.2f s", name, after[name]-before[name]))
	}
	t.Logf("CPU during %.2f s to S3: %s", wall.Seconds(), strings.Join(parts, ", "))
}

// download puts the stored object on disk, untimed.
func download(ctx context.Context, t *testing.T, st *store.S3, key, path string) {
	t.Helper()
	body, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = body.Close() }()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, body); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// timePlainLoad copies the snapshot into a fresh data dir (untimed) and times a redis-server
// from its start to loaded.
func timePlainLoad(ctx context.Context, t *testing.T, rdb string, keys int) time.Duration {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o750); err != nil {
		t.Fatal(err)
	}
	copyFile(t, rdb, filepath.Join(data, restore.DumpFile))
	start := time.Now()
	stop := startLoaded(ctx, t, dir, data, keys)
	d := time.Since(start)
	stop()
	return d
}

// timeOurRestore runs the restore subcommand as a restored pod's init container does, into an
// empty data dir, then a redis-server on it until loaded: the time to place the object, and
// the whole.
func timeOurRestore(ctx context.Context, t *testing.T, s3 *s3test.Server, key string, info snapshot.Info, keys int) (place, total time.Duration) {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o750); err != nil {
		t.Fatal(err)
	}
	args := []string{"--endpoint", "http://" + s3.Endpoint, "--bucket", s3.Bucket, "--region", s3test.Region, "--force-path-style",
		"--key", key, "--sha256", info.SHA256Hex(), "--bytes", strconv.FormatInt(info.Bytes, 10), "--data-dir", data}
	env := map[string]string{restore.EnvAccessKeyID: s3.AccessKey, restore.EnvSecretAccessKey: s3.SecretKey}
	var out strings.Builder
	start := time.Now()
	if err := restore.RunCommand(ctx, args, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("restore: %v\n%s", err, out.String())
	}
	place = time.Since(start)
	stop := startLoaded(ctx, t, dir, data, keys)
	total = time.Since(start)
	stop()
	return place, total
}

// startLoaded starts a redis-server on data (its config and log in dir) and returns once it
// answers PING, INFO persistence says loading:0 and DBSIZE is keys; stop kills it.
func startLoaded(ctx context.Context, t *testing.T, dir, data string, keys int) (stop func()) {
	t.Helper()
	port := freePort(t)
	conf := strings.Join([]string{
		"bind " + redistest.Host, "port " + strconv.Itoa(port), "dir " + data, "dbfilename " + restore.DumpFile,
		`save ""`, "appendonly no", "daemonize no", "logfile " + filepath.Join(dir, "redis.log"),
	}, "\n") + "\n"
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "redis-server", confPath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
	}
	t.Cleanup(stop)
	c := goredis.NewClient(&goredis.Options{Addr: net.JoinHostPort(redistest.Host, strconv.Itoa(port)), DisableIdentity: true,
		Protocol: 2, MaxRetries: -1, DialTimeout: time.Second, PoolSize: 1})
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server exited before it loaded:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not load within 5 min")
		}
		if loaded(ctx, c, keys) {
			return stop
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func loaded(ctx context.Context, c *goredis.Client, keys int) bool {
	if c.Ping(ctx).Err() != nil {
		return false
	}
	info, err := c.Info(ctx, "persistence").Result()
	if err != nil || !strings.Contains(info, "loading:0\r\n") {
		return false
	}
	n, err := c.DBSize(ctx).Result()
	return err == nil && n == int64(keys)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", net.JoinHostPort(redistest.Host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// sampleEvery is how often the memory is read while a stream runs.
const sampleEvery = 20 * time.Millisecond

// peak samples this process's heap in use (runtime.MemStats.HeapInuse) and resident set
// (/proc/self/statm) while our streams run, and keeps the largest of each.
type peak struct {
	mu                  sync.Mutex
	heapBefore, heapMax uint64
	liveMax, rssMax     uint64
	stop, done          chan struct{}
}

func newPeak() *peak { return &peak{} }

func (p *peak) begin() {
	// Memory an earlier stream freed goes back to the system first, so that the resident
	// set says what this stream holds, not what the runtime kept from the one before.
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.mu.Lock()
	p.heapBefore = max(p.heapBefore, ms.HeapInuse)
	p.mu.Unlock()
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			p.sample()
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
}

func (p *peak) end() {
	close(p.stop)
	<-p.done
	p.sample()
}

func (p *peak) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	rss := residentBytes()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heapMax = max(p.heapMax, ms.HeapInuse)
	if live[0].Value.Kind() == metrics.KindUint64 {
		p.liveMax = max(p.liveMax, live[0].Value.Uint64())
	}
	p.rssMax = max(p.rssMax, rss)
}

func (p *peak) run(keys int, rdb int64, streams int, s3MBps float64) MemoryRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return MemoryRun{Keys: keys, RDBBytes: rdb, Streams: streams, HeapInuseBefore: p.heapBefore, HeapInuseMax: p.heapMax, LiveHeapMax: p.liveMax,
		RSSMax: p.rssMax, OursS3MBps: s3MBps, HeapInuseMaxToRDB: float64(p.heapMax) / float64(rdb)}
}

// residentBytes is the process's resident set from /proc/self/statm (0 elsewhere).
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mbps(bytes int64, seconds float64) float64 { return float64(bytes) / 1e6 / seconds }

func machine(t *testing.T) Machine {
	t.Helper()
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadAverageStart: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if out, err := exec.CommandContext(t.Context(), "redis-server", "--version").Output(); err == nil {
		m.RedisVersion = strings.TrimSpace(string(out))
	}
	return m
}

// loadAverage is the 1-minute load average (0 without /proc).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// repoRoot is the root module's directory, found upwards from the package's.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/rediskube/redis-operator\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/rediskube/redis-operator above the test")
		}
		dir = parent
	}
}

func report(t *testing.T, r Results) {
	t.Helper()
	b, rs := r.Backup, r.Restore
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d keys × %d B, RDB %.1f MB, %d rounds; %d CPUs, %s; load average %.1f → %.1f\n", r.Keys, r.ValueBytes,
		float64(r.RDBBytes)/1e6, r.Rounds, r.Machine.CPUs, r.Machine.CPUModel, r.Machine.LoadAverageStart, r.Machine.LoadAverageEnd)
	fmt.Fprintf(&sb, "%-52s %s\n", "measure (median of the rounds)", "value")
	rows := [][2]string{
		{"backup: redis-cli --rdb to a file", fmt.Sprintf("%.0f MB/s %s", b.RedisCLIMBps, secs(b.RedisCLISeconds))},
		{"backup: ours to a file", fmt.Sprintf("%.0f MB/s %s", b.OursFileMBps, secs(b.OursFileSeconds))},
		{"backup: ours to S3 (versitygw), as a RedisBackup", fmt.Sprintf("%.0f MB/s %s", b.OursS3MBps, secs(b.OursS3Seconds))},
		{"backup: of which after the snapshot's last byte", secs(b.OursS3TailSeconds)},
		{"backup: ours to S3 ÷ redis-cli (target ≥ 0.8)", fmt.Sprintf("%.2f× (%s)", b.OursS3OverRedisCLI, verdict(b.S3MeetsTarget))},
		{"backup: ours to a file ÷ redis-cli", fmt.Sprintf("%.2f×", b.OursFileOverRedisCLI)},
		{"restore: plain redis-server loads from disk", fmt.Sprintf("%.2f s %s", rs.PlainMedian, secs(rs.PlainSeconds))},
		{"restore: ours (restore subcommand + load)", fmt.Sprintf("%.2f s %s", rs.OursMedian, secs(rs.OursSeconds))},
		{"restore: of which placing the object", secs(rs.OursPlaceSeconds)},
		{"restore: ours ÷ plain (target ≤ 1.5)", fmt.Sprintf("%.2f× (%s)", rs.OursOverPlain, verdict(rs.OursMeetsTarget))},
	}
	for _, m := range r.Memory.Runs {
		rows = append(rows, [2]string{fmt.Sprintf("memory while streaming %d keys (%.0f MB)", m.Keys, float64(m.RDBBytes)/1e6),
			fmt.Sprintf("heap in use ≤ %.1f MiB, live ≤ %.1f MiB, RSS ≤ %.1f MiB",
				float64(m.HeapInuseMax)/(1<<20), float64(m.LiveHeapMax)/(1<<20), float64(m.RSSMax)/(1<<20))})
	}
	rows = append(rows, [2]string{"memory: 2N ÷ N (heap in use, live, RSS)",
		fmt.Sprintf("%.2f×, %.2f×, %.2f×", r.Memory.HeapGrowth, r.Memory.LiveHeapGrowth, r.Memory.RSSGrowth)})
	for _, row := range rows {
		fmt.Fprintf(&sb, "%-52s %s\n", row[0], row[1])
	}
	fmt.Print(sb.String())

	name := "backup-latest.json"
	if r.Keys != defaultKeys {
		name = "backup-partial.json"
	}
	out := filepath.Join(repoRoot(t), "bench", "results", name)
	if err := os.MkdirAll(filepath.Dir(out), 0o750); err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, append(data, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	fmt.Println("written to", out)
}

func secs(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return "(" + strings.Join(parts, ", ") + " s)"
}
