// Command tlogcheck reads an imixs-archive ledger served as C2SP tlog-tiles with Go's own
// golang.org/x/mod/sumdb packages, as an auditor's standard tools would, and checks it:
//
//   - the checkpoint at <url>/checkpoint is signed by the key given (sumdb/note);
//   - the tiles at <url>/tile/<L>/<N>[.p/<W>] are the tree the checkpoint signs
//     (tlog.TileHashReader checks every tile it reads against the signed root);
//   - every entry of the bundles at <url>/tile/entries/<N>[.p/<W>] is in that tree
//     (tlog.ProveRecord from the tiles, tlog.CheckRecord against the signed root);
//   - with -old, an older checkpoint's tree is the beginning of this one
//     (tlog.ProveTree, tlog.CheckTree).
//
// It prints what it checked as JSON (the entries' texts among it) and exits 0, or names
// what does not hold and exits 1. Credentials, when needed, come from TLOGCHECK_AUTH
// (user:password, HTTP Basic).
package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

type checkpoint struct {
	origin string
	tree   tlog.Tree
}

type client struct {
	base string
	auth string
}

func (c client) get(path string) ([]byte, error) {
	req, err := http.NewRequest("GET", c.base+"/"+path, nil)
	if err != nil {
		return nil, err
	}
	if user, pass, ok := strings.Cut(c.auth, ":"); ok {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, nil
}

// indexPath writes a tile index as C2SP tlog-tiles does: groups of three digits, all
// but the last after an "x".
func indexPath(n int64) string {
	groups := []string{fmt.Sprintf("%03d", n%1000)}
	for n /= 1000; n > 0; n /= 1000 {
		groups = append([]string{fmt.Sprintf("x%03d", n%1000)}, groups...)
	}
	return strings.Join(groups, "/")
}

// tilePath is a tile's C2SP path: unlike tlog.Tile.Path, it names no height, and the
// entry bundles (level -1 in tlog) are "entries".
func tilePath(t tlog.Tile) string {
	level := strconv.Itoa(t.L)
	if t.L < 0 {
		level = "entries"
	}
	path := "tile/" + level + "/" + indexPath(t.N)
	if t.W != 1<<height {
		path += ".p/" + strconv.Itoa(t.W)
	}
	return path
}

// tileReader is a tlog.TileReader over the served tiles; it keeps the tiles that
// tlog.TileHashReader has verified (SaveTiles), as a client of a log does.
type tileReader struct {
	c     client
	reads int
	saved map[string][]byte
}

func (r *tileReader) Height() int { return height }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		if data, ok := r.saved[tilePath(t)]; ok {
			out[i] = data
			continue
		}
		data, err := r.c.get(tilePath(t))
		if err != nil {
			return nil, err
		}
		r.reads++
		out[i] = data
	}
	return out, nil
}

func (r *tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {
	for i, t := range tiles {
		r.saved[tilePath(t)] = data[i]
	}
}

func openCheckpoint(text []byte, verifier note.Verifier) (checkpoint, error) {
	n, err := note.Open(text, note.VerifierList(verifier))
	if err != nil {
		return checkpoint{}, fmt.Errorf("checkpoint signature: %w", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 {
		return checkpoint{}, errors.New("checkpoint: too few lines")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 {
		return checkpoint{}, fmt.Errorf("checkpoint size %q", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return checkpoint{}, fmt.Errorf("checkpoint root %q", lines[2])
	}
	var hash tlog.Hash
	copy(hash[:], root)
	return checkpoint{lines[0], tlog.Tree{N: size, Hash: hash}}, nil
}

// entries reads every entry of the tree from the bundles.
func entries(c client, size int64) ([][]byte, error) {
	var all [][]byte
	for n := int64(0); n*(1<<height) < size; n++ {
		width := size - n*(1<<height)
		if width > 1<<height {
			width = 1 << height
		}
		data, err := c.get(tilePath(tlog.Tile{H: height, L: -1, N: n, W: int(width)}))
		if err != nil {
			return nil, err
		}
		for len(data) > 0 {
			if len(data) < 2 {
				return nil, fmt.Errorf("bundle %d: a length cut short", n)
			}
			length := int(data[0])<<8 | int(data[1])
			if len(data) < 2+length {
				return nil, fmt.Errorf("bundle %d: an entry cut short", n)
			}
			all = append(all, data[2:2+length])
			data = data[2+length:]
		}
		if int64(len(all)) != n*(1<<height)+width {
			return nil, fmt.Errorf("bundle %d holds %d entries, not %d", n, len(all), width)
		}
	}
	return all, nil
}

type report struct {
	Origin     string   `json:"origin"`
	Size       int64    `json:"size"`
	Entries    []string `json:"entries"`
	Consistent *int64   `json:"consistent_from,omitempty"`
	TileReads  int      `json:"tile_reads"`
}

func run() (*report, error) {
	base := flag.String("url", "", "the log's prefix, e.g. http://127.0.0.1:8080/ledger")
	vkey := flag.String("key", "", "the ledger's public key (a note verifier key)")
	old := flag.String("old", "", "an older checkpoint file: prove this log extends it")
	flag.Parse()
	verifier, err := note.NewVerifier(strings.TrimSpace(*vkey))
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	c := client{strings.TrimRight(*base, "/"), os.Getenv("TLOGCHECK_AUTH")}
	text, err := c.get("checkpoint")
	if err != nil {
		return nil, err
	}
	cp, err := openCheckpoint(text, verifier)
	if err != nil {
		return nil, err
	}
	tr := &tileReader{c: c, saved: map[string][]byte{}}
	hashes := tlog.TileHashReader(cp.tree, tr)
	root, err := tlog.TreeHash(cp.tree.N, hashes)
	if err != nil {
		return nil, fmt.Errorf("tree hash from the tiles: %w", err)
	}
	if root != cp.tree.Hash {
		return nil, errors.New("the tiles' tree hash is not the checkpoint's")
	}
	all, err := entries(c, cp.tree.N)
	if err != nil {
		return nil, err
	}
	out := &report{Origin: cp.origin, Size: cp.tree.N}
	for i, entry := range all {
		proof, err := tlog.ProveRecord(cp.tree.N, int64(i), hashes)
		if err != nil {
			return nil, fmt.Errorf("inclusion proof of entry %d: %w", i, err)
		}
		if err := tlog.CheckRecord(proof, cp.tree.N, cp.tree.Hash, int64(i), tlog.RecordHash(entry)); err != nil {
			return nil, fmt.Errorf("entry %d is not in the signed tree: %w", i, err)
		}
		out.Entries = append(out.Entries, string(entry))
	}
	if *old != "" {
		text, err := os.ReadFile(*old)
		if err != nil {
			return nil, err
		}
		before, err := openCheckpoint(text, verifier)
		if err != nil {
			return nil, fmt.Errorf("old %w", err)
		}
		proof, err := tlog.ProveTree(cp.tree.N, before.tree.N, hashes)
		if err != nil {
			return nil, fmt.Errorf("consistency proof: %w", err)
		}
		if err := tlog.CheckTree(proof, cp.tree.N, cp.tree.Hash, before.tree.N, before.tree.Hash); err != nil {
			return nil, fmt.Errorf("the old checkpoint's log is not the start of this one: %w", err)
		}
		out.Consistent = &before.tree.N
	}
	out.TileReads = tr.reads
	return out, nil
}

func main() {
	out, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlogcheck:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
