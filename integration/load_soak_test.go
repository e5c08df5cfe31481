//go:build soak

package integration

import (
	"testing"
	"time"
)

// soakLoad is the `make soak` version of TestLoad: minutes of load over a
// few hundred MiB, more of it in S3 than the memory cache holds, so that
// the cache fills and evicts throughout.
var soakLoad = loadPlan{duration: 5 * time.Minute, readers: 16, localFiles: 8, s3Files: 20,
	fileBytes: 16 << 20, appendBytes: 1 << 20, cacheSize: "64M"}

func TestLoadSoak(t *testing.T) { runLoad(t, soakLoad) }
