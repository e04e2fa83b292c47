package containerinit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Entrypoint is an image's entrypoint that the sandbox emulates: the images users run ship
// scripts whose effect decides what Redis runs (shared/reference/images.md), so a container
// whose command is that script gets the effect, not the host's idea of it.
type Entrypoint struct {
	// Path is the image's ENTRYPOINT[0], as a container's command names it.
	Path string `json:"path"`
	// Behaviour is one of the images package's constants (docker-library, opstree-redis,
	// opstree-sentinel, bitnami, versitygw).
	Behaviour string `json:"behaviour"`
	// Server is the docker-library image's server program (redis-server or valkey-server).
	Server string `json:"server,omitempty"`
	// ServerUser is who the docker-library entrypoint drops to for the server (uid 999).
	ServerUser *User `json:"serverUser,omitempty"`
	// root prefixes the files the scripts write (tests; in a container the root is /).
	root string
}

// Entrypoint behaviours (the images package's constants: containerinit does not import it).
const (
	dockerLibrary   = "docker-library"
	opstreeRedis    = "opstree-redis"
	opstreeSentinel = "opstree-sentinel"
	bitnami         = "bitnami"
	versitygw       = "versitygw"
)

const (
	opstreeRedisConf    = "/etc/redis/redis.conf"
	opstreeSentinelConf = "/etc/redis/sentinel.conf"
	bitnamiRunScript    = "/opt/bitnami/scripts/redis/run.sh"
	bitnamiRedisConf    = "/opt/bitnami/redis/etc/redis.conf"
)

// exitError ends the container as a script's failure would: it started, printed, exited.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// runsEntrypoint tells whether argv starts the emulated entrypoint of the image.
func (e *Entrypoint) runsEntrypoint(argv []string, env []string) bool {
	if e == nil || e.Path == "" || len(argv) == 0 {
		return false
	}
	if argv[0] == e.Path {
		return true
	}
	got, err1 := lookPath(argv[0], env)
	want, err2 := lookPath(e.Path, env)
	return err1 == nil && err2 == nil && got == want
}

// beforeUser is the part of the entrypoint that runs with the container's own identity,
// before it is applied: the docker-library script, started as root for the server, gives
// the working directory to the server's user and runs the server as that user.
func (e *Entrypoint) beforeUser(argv []string, user *User) ([]string, *User, error) {
	args := argv[1:]
	switch e.Behaviour {
	case dockerLibrary:
		if len(args) == 0 {
			return nil, nil, errors.New("no command specified")
		}
		if strings.HasPrefix(args[0], "-") || strings.HasSuffix(args[0], ".conf") {
			args = append([]string{e.Server}, args...)
		}
		if filepath.Base(args[0]) == e.Server && (user == nil || user.UID == 0) && e.ServerUser != nil {
			if err := chownTree(".", e.ServerUser.UID); err != nil {
				return nil, nil, fmt.Errorf("entrypoint: give the working directory to uid %d: %w", e.ServerUser.UID, err)
			}
			u := *e.ServerUser
			return args, &u, nil
		}
		return args, user, nil
	default:
		return args, user, nil
	}
}

// afterUser is the part that runs as the container's user: the opstree scripts write their
// configuration files (failing where that user may not write, as the scripts do, and going
// on) and run the server on them whatever arguments were given; bitnami's run.sh refuses to
// start without a password unless told to.
func (e *Entrypoint) afterUser(args []string, env []string) ([]string, error) {
	get := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	switch e.Behaviour {
	case opstreeRedis:
		var lines []string
		if pw := get("REDIS_PASSWORD"); pw != "" {
			lines = append(lines, "requirepass "+pw, "masterauth "+pw)
		}
		if get("SETUP_MODE") == "cluster" {
			lines = append(lines, "cluster-enabled yes", "cluster-config-file /node-conf/nodes.conf")
		}
		if get("PERSISTENCE_ENABLED") == "true" {
			lines = append(lines, "appendonly yes")
		}
		if p := get("REDIS_PORT"); p != "" {
			lines = append(lines, "port "+p)
		}
		for _, l := range lines {
			if err := appendLine(e.root+opstreeRedisConf, l); err != nil {
				fmt.Fprintf(os.Stderr, "entrypoint.sh: %v\n", err)
			}
		}
		return []string{"redis-server", opstreeRedisConf}, nil
	case opstreeSentinel:
		or := func(k, def string) string {
			if v := get(k); v != "" {
				return v
			}
			return def
		}
		conf := fmt.Sprintf("port 26379\nsentinel monitor %s %s %s %s\n",
			or("MASTER_GROUP_NAME", "mymaster"), or("IP", "0.0.0.0"), or("PORT", "6379"), or("QUORUM", "2"))
		if err := os.WriteFile(e.root+opstreeSentinelConf, []byte(conf), 0o664); err != nil {
			fmt.Fprintf(os.Stderr, "entrypoint-sentinel.sh: %v\n", err)
		}
		return []string{"redis-sentinel", opstreeSentinelConf}, nil
	case bitnami:
		if len(args) == 0 || args[0] != bitnamiRunScript {
			return args, nil
		}
		pw := get("REDIS_PASSWORD")
		if pw == "" && get("ALLOW_EMPTY_PASSWORD") != "yes" {
			return nil, &exitError{code: 1, msg: "run.sh: no REDIS_PASSWORD given and ALLOW_EMPTY_PASSWORD is not yes: refusing to start without a password"}
		}
		out := []string{"redis-server", bitnamiRedisConf}
		if pw != "" {
			out = append(out, "--requirepass", pw, "--masterauth", pw)
		}
		return out, nil
	case versitygw:
		return versitygwArgs(args, get)
	default:
		return args, nil
	}
}

// versitygwBinary is where the versitygw image has the gateway.
const versitygwBinary = "/usr/local/bin/versitygw"

// versitygwArgs is what the versitygw image's docker-entrypoint.sh runs: the gateway with the
// container's arguments when it has any; otherwise the global flags of VGW_ARGS, the backend
// VGW_BACKEND names, its directory VGW_BACKEND_ARG and its flags VGW_BACKEND_ARGS (the lists
// split at white space, as the script's unquoted expansions split them).
func versitygwArgs(args []string, get func(string) string) ([]string, error) {
	if len(args) > 0 {
		return append([]string{versitygwBinary}, args...), nil
	}
	backend := get("VGW_BACKEND")
	switch backend {
	case "posix", "scoutfs", "s3", "azure", "plugin", "iam":
	case "":
		return nil, &exitError{code: 1, msg: "docker-entrypoint.sh: no arguments and no VGW_BACKEND: set VGW_BACKEND (posix, scoutfs, s3, azure, plugin or iam) or give the gateway's arguments"}
	default:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("docker-entrypoint.sh: VGW_BACKEND %q is not a backend", backend)}
	}
	out := append([]string{versitygwBinary}, strings.Fields(get("VGW_ARGS"))...)
	out = append(out, backend)
	if dir := get("VGW_BACKEND_ARG"); dir != "" {
		out = append(out, dir)
	}
	return append(out, strings.Fields(get("VGW_BACKEND_ARGS"))...), nil
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o664)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// chownTree gives every file under dir that another user owns to uid, as the official
// image's `find . \! -user redis -exec chown redis {} +` does (the group stays).
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if owner(info) == uid {
			return nil
		}
		return os.Lchown(p, uid, -1)
	})
}

// protectedModeOff adds --protected-mode no to a redis-server or valkey-server of an image
// whose server is built with that default (the official images patch it), unless the
// arguments or the config file set it.
func protectedModeOff(args []string) []string {
	base := filepath.Base(args[0])
	if base != "redis-server" && base != "redis-sentinel" && base != "valkey-server" && base != "valkey-sentinel" {
		return args
	}
	for _, a := range args[1:] {
		if a == "--protected-mode" {
			return args
		}
	}
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		if b, err := os.ReadFile(args[1]); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "protected-mode") {
					return args
				}
			}
		}
	}
	return append(args, "--protected-mode", "no")
}

// owner is the uid that owns the file.
func owner(info fs.FileInfo) int {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
