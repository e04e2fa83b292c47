package kubectlredis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// CliOptions is what cli is asked: the pod (or the master), and one command or none (then the
// commands are read from In).
type CliOptions struct {
	Pod     string
	Master  bool
	Command []string
	In      io.Reader
}

func checkCli(inv invocation) error {
	if inv.set("master") && inv.value("kind") != "" {
		if k, _ := normalizeKind(inv.value("kind")); k == "RedisSentinel" {
			return errors.New("--master: a RedisSentinel has no master; name a sentinel pod or leave --master out")
		}
	}
	return nil
}

// errRedisReplied is the error of a one-shot cli command Redis answered with an error: the
// reply is printed already.
var errRedisReplied = errors.New("redis replied with an error")

// Cli sends commands to a pod of the resource, as redis-cli would, and prints the replies.
func (p Plugin) Cli(ctx context.Context, name, kind string, o CliOptions) error {
	res, err := findResource(ctx, p.Client, p.Namespace, name, kind)
	if err != nil {
		return err
	}
	pod, err := p.cliPod(ctx, res, o.Pod, o.Master)
	if err != nil {
		return err
	}
	conn, err := p.connectPod(ctx, res, pod)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	if o.Command != nil {
		reply, err := send(ctx, conn, o.Command)
		if _, werr := fmt.Fprintln(p.Out, formatReply(reply, err, printsAsText(o.Command))); werr != nil {
			return werr
		}
		if err != nil && !errors.Is(err, goredis.Nil) {
			return fmt.Errorf("%s: %w", strings.ToUpper(o.Command[0]), errRedisReplied)
		}
		return nil
	}
	prompt := ""
	if isTerminal(o.In) {
		prompt = pod.Name + "> "
		if _, err := fmt.Fprintf(p.Out, "%s %s, pod %s (%s); quit or Ctrl-D to end\n", res.kind, name, pod.Name, podRole(pod)); err != nil {
			return err
		}
	}
	return session(ctx, conn, o.In, p.Out, prompt)
}

// session reads commands from in, one a line, and prints each reply, until quit, exit or the
// end of in. A line it cannot split is answered with an error and the session goes on.
func session(ctx context.Context, conn redisConn, in io.Reader, out io.Writer, prompt string) error {
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64<<10), 16<<20)
	for {
		if prompt != "" {
			if _, err := io.WriteString(out, prompt); err != nil {
				return err
			}
		}
		if !lines.Scan() {
			return lines.Err()
		}
		args, err := splitCommandLine(lines.Text())
		var text string
		switch {
		case err != nil:
			text = "(error) Invalid argument(s): " + err.Error()
		case len(args) == 0:
			continue
		case strings.EqualFold(args[0], "quit") || strings.EqualFold(args[0], "exit"):
			return nil
		default:
			reply, err := send(ctx, conn, args)
			text = formatReply(reply, err, printsAsText(args))
		}
		if _, err := fmt.Fprintln(out, text); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func send(ctx context.Context, conn redisConn, args []string) (any, error) {
	words := make([]any, len(args))
	for i, a := range args {
		words[i] = a
	}
	return conn.Do(ctx, words...).Result()
}

func isTerminal(in io.Reader) bool {
	f, ok := in.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func podRole(pod *corev1.Pod) string {
	if pod.Labels[builder.LabelSetupType] == builder.SetupSentinel {
		return "sentinel"
	}
	return dash(pod.Labels[builder.LabelRedisRole])
}

// cliPod is the pod cli talks to: POD (checked to be the resource's); with master, the master
// POD follows, or without POD the master (a RedisCluster's serving slot 0); else the first pod
// running.
func (p Plugin) cliPod(ctx context.Context, res *resource, name string, master bool) (*corev1.Pod, error) {
	if master && res.kind == "RedisSentinel" {
		return nil, errors.New("--master: a RedisSentinel has no master; name a sentinel pod or leave --master out")
	}
	pods, err := p.podsOf(ctx, res)
	if err != nil {
		return nil, err
	}
	var pod *corev1.Pod
	if name != "" {
		if pod, err = p.resourcePod(ctx, res, name); err != nil {
			return nil, err
		}
		if !master || res.kind == "Redis" {
			return pod, nil
		}
		return p.masterOf(ctx, res, pod, pods)
	}
	redisPods := pods[:0:0]
	for i := range pods {
		if pods[i].Labels[builder.LabelSetupType] != builder.SetupSentinel && pods[i].Status.Phase == corev1.PodRunning {
			redisPods = append(redisPods, pods[i])
		}
	}
	switch {
	case res.kind == "RedisSentinel":
		for i := range pods {
			if pods[i].Status.Phase == corev1.PodRunning {
				return &pods[i], nil
			}
		}
		return nil, fmt.Errorf("%s %s has no pod running", res.kind, res.obj.GetName())
	case len(redisPods) == 0:
		return nil, fmt.Errorf("%s %s has no Redis pod running", res.kind, res.obj.GetName())
	case !master || res.kind == "Redis":
		return &redisPods[0], nil
	case res.kind == "RedisCluster":
		return p.slotZeroMaster(ctx, res, redisPods)
	}
	for i := range redisPods { // the controller keeps the label current
		if redisPods[i].Labels[builder.LabelRedisRole] == builder.RedisRoleMaster {
			return &redisPods[i], nil
		}
	}
	return p.masterOf(ctx, res, &redisPods[0], redisPods)
}

// masterOf is the pod itself when it is a master, else the pod of the master it replicates.
func (p Plugin) masterOf(ctx context.Context, res *resource, pod *corev1.Pod, pods []corev1.Pod) (*corev1.Pod, error) {
	role, err := p.askRole(ctx, res, pod)
	if err != nil {
		return nil, err
	}
	switch role.Kind {
	case redis.RoleMaster:
		return pod, nil
	case redis.RoleSlave:
		if m := podAt(pods, role.MasterIP); m != nil {
			return m, nil
		}
		return nil, fmt.Errorf("pod %s replicates %s, which is no pod of %s %s", pod.Name, role.MasterIP, res.kind, res.obj.GetName())
	}
	return nil, fmt.Errorf("pod %s is a %s, not a Redis server", pod.Name, role.Kind)
}

func (p Plugin) askRole(ctx context.Context, res *resource, pod *corev1.Pod) (redis.Role, error) {
	conn, err := p.connectPod(ctx, res, pod)
	if err != nil {
		return redis.Role{}, err
	}
	defer func() { _ = conn.Close() }()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	reply, err := conn.Do(cctx, "role").Result()
	if err != nil {
		return redis.Role{}, fmt.Errorf("ROLE on %s: %w", pod.Name, err)
	}
	return redis.ParseRole(reply)
}

// slotZeroMaster asks the first cluster pod that answers which master serves slot 0.
func (p Plugin) slotZeroMaster(ctx context.Context, res *resource, pods []corev1.Pod) (*corev1.Pod, error) {
	var errs []error
	for i := range pods {
		topo, err := p.clusterNodes(ctx, res, &pods[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range topo.Nodes {
			if !n.Is(redis.FlagMaster) || n.Is(redis.FlagFail) || !servesSlot(n.Slots, 0) {
				continue
			}
			if m := podAt(pods, n.Addr.IP); m != nil {
				return m, nil
			}
			if m := podAt(pods, n.Addr.Hostname); m != nil {
				return m, nil
			}
			return nil, fmt.Errorf("slot 0 is served by %s, which is no running pod of %s %s", n.Addr, res.kind, res.obj.GetName())
		}
		return nil, fmt.Errorf("pod %s knows no master serving slot 0", pods[i].Name)
	}
	return nil, fmt.Errorf("no pod told which master serves slot 0: %w", errors.Join(errs...))
}

func (p Plugin) clusterNodes(ctx context.Context, res *resource, pod *corev1.Pod) (redis.Topology, error) {
	conn, err := p.connectPod(ctx, res, pod)
	if err != nil {
		return redis.Topology{}, err
	}
	defer func() { _ = conn.Close() }()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	text, err := conn.Do(cctx, "cluster", "nodes").Text()
	if err != nil {
		return redis.Topology{}, fmt.Errorf("CLUSTER NODES on %s: %w", pod.Name, err)
	}
	return redis.ParseClusterNodes(text)
}

func servesSlot(ranges []redis.SlotRange, slot int) bool {
	for _, r := range ranges {
		if r.Start <= slot && slot <= r.End {
			return true
		}
	}
	return false
}

// podAt is the pod whose IP is host, or whose name the DNS name host starts with; nil if none.
func podAt(pods []corev1.Pod, host string) *corev1.Pod {
	if host == "" {
		return nil
	}
	for i := range pods {
		if pods[i].Status.PodIP == host || pods[i].Name == host || strings.HasPrefix(host, pods[i].Name+".") {
			return &pods[i]
		}
	}
	return nil
}
