package writeback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/deltafs/deltafs/delta"
	"github.com/deltafs/deltafs/internal/durable"
	"github.com/deltafs/deltafs/pqfile"
)

// uploaded is a prepared file stored in the table under a fresh name.
type uploaded struct {
	prep    *prepared
	key     string // storage key relative to the table root
	logPath string // add.path: key URL-encoded per segment
	size    int64
	modTime int64 // ms
}

// upload stores the file under a new unique key: as is, or with its
// footer rewritten to physical names (data pages untouched) under column
// mapping. The name never repeats, so nothing is ever overwritten.
func (c *Committer) upload(ctx context.Context, p *prepared) (*uploaded, error) {
	name := "part-00000-" + uuid.NewString() + "-c000"
	if p.codec != "" {
		name += "." + p.codec
	}
	key := p.dir + name + ".parquet"
	if err := delta.CheckKey(c.store, key); err != nil {
		// Stored under another name, the file would be missing for every
		// reader of the log that names it.
		return nil, invalidf("%s: partition directory %q cannot be stored as the log would name it: %v", p.display, strings.TrimSuffix(p.dir, "/"), err)
	}
	f, err := os.Open(p.file.LocalPath)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p.display, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", p.display, err)
	}
	if dir := delta.LocalDir(c.store); dir != "" && p.rename() == nil {
		return c.uploadLocal(p, f, dir, key)
	}
	var body io.Reader = f
	size := fi.Size()
	if rn := p.rename(); rn != nil {
		plan, err := pqfile.NewPlan(f, fi.Size(), nil, rn)
		if err != nil {
			return nil, invalidf("%s: rewrite footer to physical column names: %v", p.display, err)
		}
		size, _ = plan.Size()
		pr, pw := io.Pipe()
		go func() {
			_, err := plan.WriteTo(pw)
			pw.CloseWithError(err)
		}()
		defer pr.Close()
		body = pr
	}
	if c.opts.Progress != nil {
		body = &progressReader{r: body, name: p.display, total: size, fn: c.opts.Progress}
	}
	cr := &countingReader{r: crashReader(body, size)}
	if err := c.store.Put(ctx, key, cr); err != nil {
		return nil, fmt.Errorf("upload %s to %s: %w", p.display, key, err)
	}
	return &uploaded{prep: p, key: key, logPath: encodeLogPath(key), size: cr.n, modTime: time.Now().UnixMilli()}, nil
}

// uploadLocal stores a file into a local table without a trip through
// the blob API: an owned file is hard-linked (no copy at all), any other
// is copied in the kernel (copy_file_range) into a temp file that is then
// linked to its final, never-existing name. The data is synced before the
// commit can reference it.
func (c *Committer) uploadLocal(p *prepared, f *os.File, dir, key string) (*uploaded, error) {
	dst := filepath.Join(dir, filepath.FromSlash(key))
	crashPoint(CrashUploading)
	var err error
	if p.file.Owned {
		// A staged file (created 0666 less the umask: nodes) or a widened
		// copy (durable.CreateTemp) becomes the data file itself.
		err = durable.Link(f, p.file.LocalPath, dst)
	}
	if !p.file.Owned || (err != nil && !errors.Is(err, os.ErrExist)) {
		if _, serr := f.Seek(0, io.SeekStart); serr != nil {
			return nil, fmt.Errorf("upload %s: %w", p.display, serr)
		}
		_, err = durable.Write(dst, f, durable.Exclusive)
	}
	if err != nil {
		return nil, fmt.Errorf("upload %s to %s: %w", p.display, key, err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return nil, fmt.Errorf("upload %s to %s: %w", p.display, key, err)
	}
	if c.opts.Progress != nil {
		c.opts.Progress(p.display, fi.Size(), fi.Size())
	}
	return &uploaded{prep: p, key: key, logPath: encodeLogPath(key), size: fi.Size(), modTime: fi.ModTime().UnixMilli()}, nil
}

// uploadAll uploads every file; on error it removes those already stored.
func (c *Committer) uploadAll(ctx context.Context, preps []*prepared) ([]*uploaded, error) {
	out := make([]*uploaded, 0, len(preps))
	for _, p := range preps {
		u, err := c.upload(ctx, p)
		if err != nil {
			c.removeUploads(out)
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// removeUploads deletes data files that no commit references, best
// effort: an orphan data file is harmless, so failures are only logged.
func (c *Committer) removeUploads(ups []*uploaded) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, u := range ups {
		if err := c.store.Delete(ctx, u.key); err != nil {
			c.log.Warn("remove uncommitted data file", "key", u.key, "err", err)
		}
	}
}

// encodeLogPath URL-encodes each segment of a key for add.path: the Hive
// escapes ('%') become "%25", spaces "%20"; '=' stays.
func encodeLogPath(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// progressReader reports upload progress at most every 8 MiB and at EOF.
type progressReader struct {
	r           io.Reader
	name        string
	done, total int64
	last        int64
	fn          func(string, int64, int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	if p.done-p.last >= 8<<20 || (err == io.EOF && p.done != p.last) {
		p.last = p.done
		p.fn(p.name, p.done, p.total)
	}
	return n, err
}

// dataKeys lists the storage keys of the uploads.
func dataKeys(ups []*uploaded) []string {
	keys := make([]string, len(ups))
	for i, u := range ups {
		keys[i] = u.key
	}
	return keys
}
