// Command release builds a release into one directory without a container engine or a
// registry: the operator image as a multi-arch OCI image layout, the packaged charts, one
// install.yaml pinning that image by digest, the kubectl plugin's archives and krew manifest,
// a CycloneDX SBOM of the operator per image platform, the release notes and SHA256SUMS over
// all of it. `make release VERSION=x.y.z` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	opts, err := parseFlags(ctx, os.Args[1:])
	if err == nil {
		err = Build(ctx, opts)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func parseFlags(ctx context.Context, args []string) (Options, error) {
	var o Options
	var epoch string
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.StringVar(&o.Version, "version", "", "The release version, x.y.z (no leading v).")
	fs.StringVar(&o.Commit, "commit", "", "The commit the release is built from (default: git rev-parse HEAD).")
	fs.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "Unix time stamped on every file of the image and archives (default: SOURCE_DATE_EPOCH, else the commit's time).")
	fs.StringVar(&o.Root, "root", ".", "The repository's root.")
	fs.StringVar(&o.Changelog, "changelog", "", "The changelog the release notes are cut from (default: CHANGELOG.md at -root).")
	fs.StringVar(&o.Out, "out", "dist", "Directory to write the release into: must not exist or be empty.")
	fs.StringVar(&o.Repository, "repository", DefaultRepository, "The image repository the release's image is published under (the charts' default).")
	fs.StringVar(&o.Source, "source", DefaultSource, "The project's source URL (image label, krew homepage and download URLs).")
	fs.StringVar(&o.Helm, "helm", "bin/helm", "The helm binary that packages the charts.")
	fs.StringVar(&o.Kustomize, "kustomize", "bin/kustomize", "The kustomize binary that renders install.yaml from config/default.")
	fs.StringVar(&o.CycloneDXGomod, "cyclonedx-gomod", "", "The cyclonedx-gomod binary that writes the operator's SBOMs (required; make release installs bin/cyclonedx-gomod-<version>).")
	platforms := fs.String("platforms", "all", "Comma-separated os/arch pairs to build the image and the plugin for, or all: "+
		"the image gets those of "+platformList(ImagePlatforms)+" listed (at least one), the plugin those of "+platformList(PluginPlatforms)+
		". Fewer platforms build faster (the release e2e test builds this machine's only); a published release has all.")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("parse flags: %w", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q: every input is a flag", fs.Args())
	}
	var err error
	if o.operatorPlatforms, o.pluginPlatforms, err = ParsePlatforms(*platforms); err != nil {
		return o, err
	}
	if o.Commit == "" {
		out, err := git(ctx, o.Root, "rev-parse", "HEAD")
		if err != nil {
			return o, err
		}
		o.Commit = out
	}
	if epoch == "" {
		out, err := git(ctx, o.Root, "log", "-1", "--format=%ct", o.Commit)
		if err != nil {
			return o, err
		}
		epoch = out
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return o, fmt.Errorf("source date epoch %q: %w", epoch, err)
	}
	o.Time = time.Unix(sec, 0).UTC()
	return o, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
