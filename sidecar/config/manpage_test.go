package config

import (
	"bufio"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// manPage is glean.toml(5), whose KEYS section lists every key as
//
//	.SS [table]
//	.TP
//	\fBkey\fR = <default as TOML>
const manPage = "../../man/glean.toml.5"

// pageKeys reads the page's key list: "table.key" -> the default as written.
func pageKeys(t *testing.T) (keys []string, doc string) {
	t.Helper()
	f, err := os.Open(manPage)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	table, inKeys, afterTP := "", false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ".SH "):
			inKeys = line == ".SH KEYS"
		case !inKeys:
		case strings.HasPrefix(line, ".SS "):
			table = strings.Trim(strings.TrimPrefix(line, ".SS "), "[]")
			b.WriteString("[" + table + "]\n")
		case line == ".TP":
			afterTP = true
			continue
		case afterTP:
			plain := strings.NewReplacer(`\fB`, "", `\fR`, "", `\fI`, "", `\-`, "-", `\e`, `\`).Replace(line)
			key, _, ok := strings.Cut(plain, " = ")
			if !ok || table == "" {
				t.Fatalf("%s: a .TP under KEYS is not followed by `\\fBkey\\fR = default`: %q", manPage, line)
			}
			keys = append(keys, table+"."+key)
			b.WriteString(plain + "\n")
		}
		afterTP = false
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return keys, b.String()
}

// configKeys are the keys Load accepts, from Config's toml tags.
func configKeys() []string {
	var keys []string
	ct := reflect.TypeOf(Config{})
	for i := range ct.NumField() {
		table := ct.Field(i)
		for j := range table.Type.NumField() {
			keys = append(keys, table.Tag.Get("toml")+"."+table.Type.Field(j).Tag.Get("toml"))
		}
	}
	return keys
}

// glean.toml(5) lists exactly the keys the config accepts, and the
// default it gives for each is Default()'s: a key added, renamed or given
// another default without the page fails here.
func TestManPageKeys(t *testing.T) {
	page, doc := pageKeys(t)
	want := configKeys()
	for _, k := range want {
		if !slices.Contains(page, k) {
			t.Errorf("%s does not describe %s", manPage, k)
		}
	}
	for _, k := range page {
		if !slices.Contains(want, k) {
			t.Errorf("%s describes %s, which the config does not accept", manPage, k)
		}
	}
	// The defaults as written, decoded over an empty Config, are Default().
	var got Config
	if _, err := toml.Decode(doc, &got); err != nil {
		t.Fatalf("%s: the defaults do not parse as TOML: %v\n%s", manPage, err, doc)
	}
	def := Default()
	dv, gv := reflect.ValueOf(def), reflect.ValueOf(got)
	for i := range dv.NumField() {
		for j := range dv.Field(i).NumField() {
			d, g := dv.Field(i).Field(j).Interface(), gv.Field(i).Field(j).Interface()
			if !reflect.DeepEqual(d, g) {
				t.Errorf("%s: %s.%s: the page says %v, the default is %v", manPage,
					dv.Type().Field(i).Tag.Get("toml"), dv.Field(i).Type().Field(j).Tag.Get("toml"), g, d)
			}
		}
	}
}
