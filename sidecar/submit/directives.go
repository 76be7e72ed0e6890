package submit

import (
	"bytes"
	"fmt"
	"strings"
)

// Directives are the #SBATCH words of a batch script, as sbatch 22.05
// reads them: lines starting with "#SBATCH" (or the old "#SLURM") up to the
// first line that is neither blank nor a comment; each line split into
// words with '...' and "..." quoting, a backslash taking the next character
// literally (except whitespace, which still ends the word) and an unquoted
// '#' ending the line.
type Directives struct {
	Words []string
	Lines []int // Lines[i] is the script line of Words[i] (1-based)
	// Het is set when a directive line's first word is hetjob or packjob
	// (hetWord): a heterogeneous job, which glean does not make elastic.
	Het bool
	// End is the byte offset where the directive block ends (the first
	// command line, or len(script)).
	End int
}

// DirectiveError is a script problem that makes sbatch refuse the script.
type DirectiveError struct {
	Line int
	Msg  string
}

func (e *DirectiveError) Error() string { return e.Msg }

// ScanDirectives reads the directive block of script. file names the script
// in errors, as sbatch does.
func ScanDirectives(file string, script []byte) (Directives, error) {
	var d Directives
	lineno := 0
	off := 0
	for off < len(script) {
		end := bytes.IndexByte(script[off:], '\n')
		var line []byte
		next := len(script)
		if end >= 0 {
			line, next = script[off:off+end], off+end+1
		} else {
			line = script[off:]
		}
		lineno++
		var rest []byte
		switch {
		case bytes.HasPrefix(line, []byte("#SBATCH")):
			rest = line[len("#SBATCH"):]
		case bytes.HasPrefix(line, []byte("#SLURM")):
			rest = line[len("#SLURM"):]
		default:
			if isCommand(line) {
				d.End = off
				return d, nil
			}
			off = next
			continue
		}
		if hetWord(strings.TrimLeft(string(rest), " \t\n\v\f\r")) {
			d.Het = true // a separator between components; splitDirective drops the word
		}
		words, err := splitDirective(file, lineno, string(rest))
		if err != nil {
			return d, err
		}
		for _, w := range words {
			if len(d.Words) >= maxWords {
				return d, &DirectiveError{lineno, fmt.Sprintf("%s: more than %d directive words", file, maxWords)}
			}
			d.Words = append(d.Words, w)
			d.Lines = append(d.Lines, lineno)
		}
		off = next
	}
	d.End = len(script)
	return d, nil
}

// isCommand reports whether a line is an executable command: its first
// non-space character is not '#'.
func isCommand(line []byte) bool {
	for _, c := range line {
		if cIsSpace(c) {
			continue
		}
		return c != '#'
	}
	return false
}

func cIsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// hetWord reports whether s starts with the word sbatch 22.05 takes for a
// heterogeneous-job separator: hetjob or packjob in any case, followed by a
// blank or the end of the line. Only that word counts: "-J myhetjobtest",
// "-o /scratch/hetjob/%j.out" or "hetjobs" are ordinary (measured against
// sbatch 22.05.8; its get_argument and _opt_batch_script do the same).
func hetWord(s string) bool {
	for _, w := range []string{"hetjob", "packjob"} {
		if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) && (len(s) == len(w) || cIsSpace(s[len(w)])) {
			return true
		}
	}
	return false
}

// splitDirective is sbatch's _get_argument applied until the line ends. A
// hetjob/packjob word (hetWord) where a word starts ends the line: sbatch
// blanks it and reads no further words of that line (so "#SBATCH -J x
// hetjob -t 9" sets only -J x).
func splitDirective(file string, lineno int, s string) ([]string, error) {
	var words []string
	p := 0
	for {
		start := p
		for p < len(s) && cIsSpace(s[p]) {
			p++
		}
		if hetWord(s[p:]) {
			return words, nil
		}
		if p < len(s) && s[p] == ':' {
			return nil, &DirectiveError{lineno, fmt.Sprintf("%s: line %d: Unexpected `:` in [%s]", file, lineno, s[start:])}
		}
		if p >= len(s) {
			return words, nil
		}
		var b strings.Builder
		var q byte
		quoted, escape, got := false, false, false
		for p < len(s) && (quoted || !cIsSpace(s[p])) {
			c := s[p]
			if escape {
				escape = false
			} else if c == '\\' {
				escape = true
				p++
				continue
			} else if quoted {
				if c == q {
					quoted = false
					p++
					continue
				}
			} else if c == '"' || c == '\'' {
				quoted, q = true, c
				p++
				continue
			} else if c == '#' {
				p = len(s) // the rest of the line is a comment
				break
			}
			b.WriteByte(c)
			got = true
			p++
		}
		if quoted {
			return nil, &DirectiveError{lineno, fmt.Sprintf("%s: line %d: Unmatched `%c` in [%s]", file, lineno, q, s[start:])}
		}
		if !got { // sbatch stops reading the line at an empty word ("" or a comment)
			return words, nil
		}
		words = append(words, b.String())
	}
}
