package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// refName is the annotation of an OCI image layout's index.json that tags an entry (the
// release writes the version there).
const refName = "org.opencontainers.image.ref.name"

// PushLayout pushes every tagged image and image index of the OCI image layout at dir (what
// `make release` writes to dist/image) to repository on the registry at addr, each under
// its tag, and returns the references it pushed, pinned to their digests.
func PushLayout(ctx context.Context, dir, addr, repository string) ([]string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", dir, err)
	}
	repo, err := name.NewRepository(addr + "/" + repository)
	if err != nil {
		return nil, fmt.Errorf("repository: %w", err)
	}
	var pushed []string
	for _, desc := range m.Manifests {
		tagName := desc.Annotations[refName]
		if tagName == "" {
			continue
		}
		tag := repo.Tag(tagName)
		switch {
		case desc.MediaType.IsIndex():
			child, err := idx.ImageIndex(desc.Digest)
			if err != nil {
				return pushed, fmt.Errorf("%s: %w", tagName, err)
			}
			err = remote.WriteIndex(tag, child, remote.WithContext(ctx))
			if err != nil {
				return pushed, fmt.Errorf("push %s: %w", tag, err)
			}
		case desc.MediaType.IsImage():
			img, err := idx.Image(desc.Digest)
			if err != nil {
				return pushed, fmt.Errorf("%s: %w", tagName, err)
			}
			if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
				return pushed, fmt.Errorf("push %s: %w", tag, err)
			}
		default:
			continue
		}
		pushed = append(pushed, tag.String()+"@"+desc.Digest.String())
	}
	if len(pushed) == 0 {
		return nil, errors.New("image layout " + dir + " has no tagged image (annotation " + refName + ")")
	}
	return pushed, nil
}
