package submit

import (
	"fmt"
	"strings"
)

// Layer is where a setting came from. sbatch applies them in this order,
// later ones overriding earlier ones: script < environment < command line.
type Layer uint8

const (
	FromScript Layer = iota
	FromEnv
	FromCLI
	FromGlean // set by glean itself (never from user input)
)

func (l Layer) String() string {
	switch l {
	case FromScript:
		return "script"
	case FromEnv:
		return "environment"
	case FromCLI:
		return "command line"
	}
	return "glean"
}

// Setting is one option as given.
type Setting struct {
	Opt      *Option
	Value    string
	HasValue bool   // false for flags and for an optional value not given
	Layer    Layer  // where it came from
	Word     string // as the user wrote it ("-t", "--time=5", "SBATCH_TIMELIMIT"), for messages
	Line     int    // script line, for FromScript
}

// Name is how messages name the setting: "-t 5", "--glean=mode=x",
// "SBATCH_TIMELIMIT=5", "#SBATCH --time=5 (line 3)".
func (s Setting) Name() string {
	v := ""
	if s.HasValue {
		v = "=" + s.Value
	}
	switch s.Layer {
	case FromEnv:
		return s.Word + v
	case FromScript:
		return fmt.Sprintf("#SBATCH --%s%s (line %d)", s.Opt.Long, v, s.Line)
	}
	return "--" + s.Opt.Long + v
}

// maxWords bounds the argv and directive words glean parses.
const maxWords = 10000

// parseWords parses words as sbatch's getopt_long does with "+" ordering:
// options until the first operand or "--"; the operand and everything after
// it are returned as operands. Errors are in glibc's words.
func parseWords(words []string, layer Layer, line func(i int) int) (sets []Setting, operands []string, err error) {
	if len(words) > maxWords {
		return nil, nil, &OptError{Msg: fmt.Sprintf("more than %d arguments", maxWords)}
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		ln := 0
		if line != nil {
			ln = line(i)
		}
		switch {
		case w == "--":
			return sets, words[i+1:], nil
		case len(w) < 2 || w[0] != '-':
			return sets, words[i:], nil
		case strings.HasPrefix(w, "--"):
			name, val, hasVal := strings.Cut(w[2:], "=")
			o, err := lookupLong(name, w)
			if err != nil {
				err.(*OptError).Line = ln
				return sets, nil, err
			}
			s := Setting{Opt: o, Layer: layer, Word: "--" + o.Long, Line: ln}
			switch o.Arg {
			case NoArg:
				if hasVal {
					return sets, nil, &OptError{Msg: fmt.Sprintf("option '--%s' doesn't allow an argument", o.Long)}
				}
			case OptionalArg:
				s.Value, s.HasValue = val, hasVal
			case RequiredArg:
				if !hasVal {
					if i+1 >= len(words) {
						return sets, nil, &OptError{Msg: fmt.Sprintf("option '--%s' requires an argument", o.Long)}
					}
					i++
					val = words[i]
				}
				s.Value, s.HasValue = val, true
			}
			sets = append(sets, s)
		default: // a cluster of short options: -Hv, -t5, -t 5
			for j := 1; j < len(w); j++ {
				c := w[j]
				o := byShort[c]
				if o == nil {
					return sets, nil, &OptError{Msg: fmt.Sprintf("invalid option -- '%s'", string(rune(c))), Unknown: "-" + string(rune(c)), Line: ln}
				}
				s := Setting{Opt: o, Layer: layer, Word: "-" + string(rune(c)), Line: ln}
				rest := w[j+1:]
				switch o.Arg {
				case OptionalArg:
					if rest != "" {
						s.Value, s.HasValue = rest, true
					}
					j = len(w)
				case RequiredArg:
					if rest == "" {
						if i+1 >= len(words) {
							return sets, nil, &OptError{Msg: fmt.Sprintf("option requires an argument -- '%s'", string(rune(c)))}
						}
						i++
						rest = words[i]
					}
					s.Value, s.HasValue = rest, true
					j = len(w)
				}
				sets = append(sets, s)
			}
		}
	}
	return sets, nil, nil
}
