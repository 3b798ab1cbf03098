# Writes the bad-trace corpus and expected.txt (file<TAB>expected error substring, or
# "TRUNCATED <n>" for a file that loads its first n whole events and says it was cut off).
# Rerun after changing a case; the files are committed.
import os

X = '{"ph":"X","name":"a","cat":"c","ts":1,"dur":2,"pid":1,"tid":1}'
OWN_HEAD = ('{"modescope":{"version":1,"foreign":false,"dropped_events":0,"metadata":{},'
            '"tracks":[{"kind":"host","pid":1,"tid":1,"process":"p","name":"host","sort_index":0}],'
            '"nodes":[{"id":7,"name":"n","op":"Relu","origins":[7],"shapes":"","flops":1,"bytes":2}],'
            '"blocks":[]},"traceEvents":[')

def own(event_args):
    return OWN_HEAD + '{"ph":"X","name":"Relu","cat":"op","pid":1,"tid":1,"ts":1.000,"dur":1.000,"args":' + event_args + '}]}'

def ev(**kw):
    base = {"ph": '"X"', "name": '"a"', "ts": "1", "dur": "2", "pid": "1", "tid": "1"}
    for k, v in kw.items():
        if v is None:
            base.pop(k, None)
        else:
            base[k] = v
    return "{" + ",".join('"%s":%s' % (k, v) for k, v in base.items()) + "}"

cases = [
    ("empty.json", "", "before the traceEvents array"),
    ("not_json.json", "hello world", "not valid JSON at byte"),
    ("binary_garbage.json", "\x00\x01\x02\xff\xfe", "not valid JSON at byte"),
    ("number_root.json", "42", "no traceEvents array"),
    ("object_without_events.json", '{"foo": 1}', "no traceEvents array"),
    ("events_not_array.json", '{"traceEvents": {"a": 1}}', "no traceEvents array"),
    ("event_is_number.json", '{"traceEvents":[1]}', "traceEvents[0]: an event must be an object, got number"),
    ("event_is_array.json", "[[1,2]]", "traceEvents[0]: an event must be an object, got array"),
    ("second_event_is_string.json", "[" + X + ',"x"]', "traceEvents[1]: an event must be an object, got string"),
    ("missing_ph.json", "[" + ev(ph=None) + "]", "traceEvents[0]: missing 'ph'"),
    ("ph_not_string.json", "[" + ev(ph="3") + "]", "'ph' must be a string, got number"),
    ("missing_ts.json", "[" + ev(ts=None) + "]", "traceEvents[0]: missing 'ts'"),
    ("ts_garbage_string.json", "[" + ev(ts='"abc"') + "]", "'ts' must be a number, got string"),
    ("ts_bool.json", "[" + X + "," + ev(ts="true") + "]", "traceEvents[1]: 'ts' must be a number, got boolean"),
    ("missing_dur.json", "[" + ev(dur=None) + "]", "missing 'dur'"),
    ("negative_dur.json", "[" + ev(dur="-5") + "]", "'dur' is negative"),
    ("huge_ts.json", "[" + ev(ts="1e300") + "]", "'ts' = 1e+300 is out of range"),
    ("number_overflow.json", "[" + ev(ts="1e999") + "]", "number overflow"),
    ("huge_pid.json", "[" + ev(pid="1e30") + "]", "'pid' = 1e+30 is not an integer id"),
    ("pid_out_of_range.json", "[" + ev(pid="18446744073709551615") + "]", "'pid' = 18446744073709551615 is out of range"),
    ("pid_object.json", "[" + ev(pid="{}") + "]", "'pid' must be a number or a string, got object"),
    ("missing_pid.json", "[" + ev(pid=None) + "]", "missing 'pid'"),
    ("missing_tid.json", "[" + ev(tid=None) + "]", "missing 'tid'"),
    ("name_not_string.json", "[" + ev(name="5") + "]", "'name' must be a string, got number"),
    ("missing_name.json", "[" + ev(name=None) + "]", "missing 'name'"),
    ("args_not_object.json", "[" + ev(args="[1]") + "]", "'args' must be an object, got array"),
    ("end_without_begin.json", '[{"ph":"E","ts":5,"pid":1,"tid":1}]', "'E' event without a matching 'B'"),
    ("end_before_begin.json", '[{"ph":"B","name":"a","ts":10,"pid":1,"tid":1},{"ph":"E","ts":5,"pid":1,"tid":1}]',
     "ends before its 'B'"),
    ("counter_without_args.json", '[{"ph":"C","name":"mem","ts":1,"pid":1}]', "counter 'mem' needs an 'args' object"),
    ("counter_string_value.json", '[{"ph":"C","name":"mem","ts":1,"pid":1,"args":{"bytes":"many"}}]',
     "args.bytes must be a number, got string"),
    ("metadata_bad_name.json", '[{"ph":"M","name":"process_name","pid":1,"args":{"name":5}}]',
     "args.name must be a string"),
    ("trailing_garbage.json", "[" + X + "] x", "not valid JSON at byte"),
    ("truncated_mid_event.json", '{"traceEvents":[' + X + ',{"ph":"X","na', "TRUNCATED 1"),
    ("truncated_after_comma.json", "[" + X + "," + X + ",", "TRUNCATED 2"),
    ("truncated_before_events.json", '{"traceEvents":', "before the traceEvents array"),
    ("truncated_first_event.json", '[{"ph":"X","name":"a"', "before any whole event"),
    ("modescope_bad_version.json", '{"modescope":{"version":2},"traceEvents":[]}', "modescope.version: unsupported version 2"),
    ("modescope_bad_track_kind.json",
     '{"modescope":{"version":1,"tracks":[{"kind":"disk","pid":1,"tid":1,"process":"p","name":"n","sort_index":0}]},"traceEvents":[]}',
     "modescope.tracks[0].kind: must be one of"),
    ("modescope_block_arity.json", '{"modescope":{"version":1,"blocks":[[1,2,"v"]]},"traceEvents":[]}',
     "modescope.blocks[0]: must be [address"),
    ("modescope_block_freed_early.json", '{"modescope":{"version":1,"blocks":[[0,64,"v",1,100,50,0,0]]},"traceEvents":[]}',
     "modescope.blocks[0][5]: freed before allocated"),
    ("modescope_node_bad_id.json",
     '{"modescope":{"version":1,"nodes":[{"id":0,"name":"n","op":"Relu","origins":[],"shapes":"","flops":0,"bytes":0}]},"traceEvents":[]}',
     "modescope.nodes[0].id: must be a positive integer"),
    ("modescope_unknown_node.json", own('{"kind":"op","iteration":0,"node_id":99}'), "args.node_id 99 is not in modescope.nodes"),
    ("modescope_bad_kind.json", own('{"kind":"bogus","iteration":0}'), "args.kind 'bogus' is not op, kernel, run or foreign"),
    ("modescope_huge_iteration.json", own('{"kind":"op","iteration":10000000000}'), "args.iteration must be a 32-bit integer"),
    ("modescope_after_events.json", '{"traceEvents":[' + X + '],"modescope":{"version":1}}',
     "the modescope section must come before traceEvents"),
]

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "expected.txt"), "w") as exp:
    exp.write("# file<TAB>expected error substring (or TRUNCATED <whole events loaded>)\n")
    for name, text, expected in cases:
        with open(os.path.join(here, name), "wb") as f:
            f.write(text.encode("latin-1"))
        exp.write("%s\t%s\n" % (name, expected))
print(len(cases), "cases")
