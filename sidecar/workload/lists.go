package workload

import (
	"embed"
	"fmt"
)

// The seed thesis's two submit lists (appendix 8.2) are built into glean,
// so that `glean sim` with its default workload runs wherever glean is
// installed, with no data file to ship or look for. They are copies of
// ../shared/workloads's (TestThesisListCopies keeps them so).
//
//go:embed lists/thesis-submit-list-1.txt lists/thesis-submit-list-2.txt
var lists embed.FS

// ThesisList returns submit list n ("1" or "2") and its file name.
func ThesisList(n string) (data []byte, name string, err error) {
	if n != "1" && n != "2" {
		return nil, "", fmt.Errorf("no thesis list %q: there are thesis-1 and thesis-2", n)
	}
	name = "thesis-submit-list-" + n + ".txt"
	data, err = lists.ReadFile("lists/" + name)
	return data, name, err
}
