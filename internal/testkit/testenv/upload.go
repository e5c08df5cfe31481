package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/gcsblob" // gs:// URLs
	_ "gocloud.dev/blob/s3blob"  // s3:// URLs
)

// UploadDir copies every regular file under localDir into the bucket of
// bucketURL (a URL as returned by S3, GCS or Azure) under prefix ("" for
// the bucket root), keeping relative paths, for example a fixture's table/
// dir to "tables/basic". A path in bucketURL is a prefix before prefix.
// It fails the test on any error.
func UploadDir(t testing.TB, bucketURL, prefix, localDir string) {
	t.Helper()
	ctx := context.Background()
	b, root, err := openTestBucket(ctx, bucketURL)
	if err != nil {
		t.Fatalf("testenv: open %s: %v", bucketURL, err)
	}
	defer b.Close()
	var keys []string
	err = filepath.WalkDir(localDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(localDir, p)
		keys = append(keys, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatalf("testenv: walk %s: %v", localDir, err)
	}
	if err := uploadAll(ctx, b, joinKey(root, strings.Trim(prefix, "/")), localDir, keys); err != nil {
		t.Fatalf("testenv: upload %s to %s: %v", localDir, bucketURL, err)
	}
}

// uploadAll uploads the files (relative keys under dir) 8 at a time.
func uploadAll(ctx context.Context, b *blob.Bucket, prefix, dir string, keys []string) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, 8)
	)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := uploadFile(ctx, b, joinKey(prefix, k), filepath.Join(dir, filepath.FromSlash(k)))
			mu.Lock()
			if err != nil && first == nil {
				first = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return first
}

func uploadFile(ctx context.Context, b *blob.Bucket, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// A ContentType spares the content sniffing; Upload (not NewWriter)
	// avoids gocloud azureblob's panic when a write fails.
	return b.Upload(ctx, key, f, &blob.WriterOptions{ContentType: "application/octet-stream"})
}

// joinKey joins two key prefixes, either of which may be "".
func joinKey(prefix, key string) string {
	switch {
	case prefix == "":
		return key
	case key == "":
		return prefix
	}
	return prefix + "/" + key
}

// openTestBucket opens the bucket of a URL and returns the URL's path as a
// key prefix. azblob:// reads the environment on each open, like
// blobstore.Open: gocloud's default azblob opener keeps the first
// test's settings for the whole process.
func openTestBucket(ctx context.Context, bucketURL string) (*blob.Bucket, string, error) {
	u, err := url.Parse(bucketURL)
	if err != nil {
		return nil, "", err
	}
	root := strings.Trim(u.Path, "/")
	u.Path, u.RawPath = "", ""
	var b *blob.Bucket
	if u.Scheme == azureblob.Scheme {
		o := &azureblob.URLOpener{MakeClient: azureblob.NewDefaultClient, ServiceURLOptions: *azureblob.NewDefaultServiceURLOptions()}
		b, err = o.OpenBucketURL(ctx, u)
	} else {
		b, err = blob.OpenBucket(ctx, u.String())
	}
	return b, root, err
}

// createContainer creates an Azure blob container through a connection
// string.
func createContainer(conn, name string) error {
	c, err := container.NewClientFromConnectionString(conn, name, nil)
	if err != nil {
		return err
	}
	if _, err := c.Create(context.Background(), nil); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	return nil
}
