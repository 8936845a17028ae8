"""A run report's per-example detail: a companion script file, and the pager that shows it.

`report.html` stays small at any run size: every example (conversation, reply, each criterion
with its verdict and the judge's explanation) goes into `report_examples.js` beside it, which the
page loads with `<script src>` (that works from disk, offline) and shows a page of examples at a
time, filterable by theme. Opening `report.html` is still all it takes; a page copied without its
companion says where the detail is.

The companion is written by streaming: examples.jsonl and per_criterion.jsonl hold the rows of
each (example, rollout) together and in the same order, so one pass records where each example's
lines start; the examples are then written lowest score first, reading each one's lines back by
offset. Memory stays flat.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from pathlib import Path

from healthbench_exp.output.html.charts import number, records
from healthbench_exp.output.html.jury import JUDGES_SCRIPT, judge_verdicts

COMPANION = "report_examples.js"
PAGE_SIZE = 50
VARIABLE = "HEALTHBENCH_EXAMPLES"


def outcome(row: Mapping[str, object]) -> tuple[int, str, str]:
    """(sort key, label, css class): criteria that cost the reply points come first."""
    met, points = row["criteria_met"], number(row, "points") or 0
    if met is None:
        return 1, "ungraded", "muted"
    label = "met" if met else "not met"
    return (0, label, "bad") if (points > 0) != met else (2, label, "good")


def example_record(
    example: Mapping[str, object], criteria: list[Mapping[str, object]]
) -> dict[str, object]:
    """One example as the pager reads it; criteria that cost points first."""
    graded = []
    outcomes = [(outcome(c), c) for c in criteria]  # sorted by the key alone: stable, as before
    for (_, label, css), c in sorted(outcomes, key=lambda pair: pair[0][0]):
        entry = [c["points"], label, css, c["criterion"], c["explanation"] or c["error"]]
        judges = judge_verdicts(c, outcome)  # a jury run: every judge's verdict
        graded.append(entry if judges is None else [*entry, judges])
    return {
        "id": example["prompt_id"],
        "theme": example["theme"],
        "rollout": example["rollout"],
        "score": example["score"],
        "error": example["error"],
        "messages": [[m["role"], m["content"]] for m in records(example["messages"])],
        "reply": example["completion"],
        "criteria": graded,
    }


def _index(output_dir: Path) -> list[tuple[bool, float, int, int, int]]:
    """Per example: (scored, score, offset in examples.jsonl, offset in per_criterion.jsonl,
    criteria count)."""
    index: list[tuple[bool, float, int, int, int]] = []
    with open(output_dir / "examples.jsonl", "rb") as examples:
        offset = 0
        for line in examples:
            row = json.loads(line)
            index.append(
                (row["score"] is not None, row["score"] or 0.0, offset, 0, row["criteria"])
            )
            offset += len(line)
    criteria_offset = 0
    with open(output_dir / "per_criterion.jsonl", "rb") as criteria:
        for position, (_, _, _, _, count) in enumerate(index):
            start = criteria_offset
            for _ in range(count):
                criteria_offset += len(criteria.readline())
            index[position] = (*index[position][:3], start, count)
    return index


def write_companion(output_dir: Path) -> tuple[int, list[str]]:
    """Write `report_examples.js`, lowest score first; return the count and the themes."""
    index = _index(output_dir)
    themes: set[str] = set()
    partial = output_dir / (COMPANION + ".partial")
    with (
        open(partial, "w", encoding="utf-8") as out,
        open(output_dir / "examples.jsonl", "rb") as examples,
        open(output_dir / "per_criterion.jsonl", "rb") as criteria,
    ):
        out.write(f"window.{VARIABLE} = [\n")
        for _, _, example_offset, criteria_start, count in sorted(index, key=lambda i: i[:2]):
            examples.seek(example_offset)
            criteria.seek(criteria_start)
            # the example's criterion lines as one JSON array: one decode, not one per line
            lines = b",".join(criteria.readline().rstrip(b"\n") for _ in range(count))
            rows = json.loads(b"[" + lines + b"]")
            record = example_record(json.loads(examples.readline()), rows)
            theme = record["theme"]
            if isinstance(theme, str):
                themes.add(theme)
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + ",\n")
        out.write("];\n")
    partial.replace(output_dir / COMPANION)
    return len(index), sorted(themes)


# The pager: builds the DOM with textContent only (no markup from the data is ever parsed).
PAGER_SCRIPT = """
(function(){
var all=window.%(var)s, box=document.getElementById('examples'), size=%(size)d, page=0;
var themeSel=document.getElementById('theme-filter'), info=document.getElementById('page-info');
if(!all){box.textContent='The per-example detail is in %(file)s next to this page; '+
  'keep the two files together to see it.';return;}
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;
  if(text!==undefined&&text!==null)e.textContent=text;return e;}
%(judges)s
function shown(){var t=themeSel.value;return t?all.filter(function(x){return x.theme===t;}):all;}
function render(){
  var rows=shown(), pages=Math.max(1,Math.ceil(rows.length/size));
  page=Math.min(Math.max(page,0),pages-1);
  info.textContent='page '+(page+1)+' of '+pages+' ('+rows.length+' examples)';
  box.textContent='';
  rows.slice(page*size,(page+1)*size).forEach(function(x){
    var d=el('details',x.error?'failed':''), s=el('summary');
    var score=x.error?'failed':(x.score===null?'–':x.score.toFixed(4));
    s.textContent=x.id+' · '+x.theme+' · rollout '+x.rollout+' · score '+score;
    d.appendChild(s);
    x.messages.forEach(function(m){var p=el('pre');p.appendChild(el('b',null,m[0]));
      p.appendChild(document.createTextNode(': '+m[1]));d.appendChild(p);});
    if(x.reply){var p=el('pre');p.appendChild(el('b',null,'assistant (reply)'));
      p.appendChild(document.createTextNode(': '+x.reply));d.appendChild(p);}
    else d.appendChild(el('p','bad',x.error||'no reply'));
    var t=el('table'),h=el('tr'),jury=x.criteria.some(function(c){return c.length>5;});
    ['points','verdict','criterion','judge explanation'].concat(jury?['each judge']:[]).forEach(
      function(c){h.appendChild(el('th',null,c));});
    t.appendChild(h);
    x.criteria.forEach(function(c){var r=el('tr');r.appendChild(el('td','num',String(c[0])));
      r.appendChild(el('td','verdict '+c[2],c[1]));r.appendChild(el('td',null,c[3]));
      r.appendChild(el('td','muted',c[4]||''));if(jury)r.appendChild(judgesCell(c[5]));
      t.appendChild(r);});
    d.appendChild(t);box.appendChild(d);});
}
document.getElementById('prev').onclick=function(){page--;render();};
document.getElementById('next').onclick=function(){page++;render();};
themeSel.onchange=function(){page=0;render();};
render();
})();
"""


# how an example's score and its negative criteria read, on the page beside them
SCORES_NOTE = (
    "An example's score is the points of the criteria its reply met, negative criteria "
    "included, over the points of its positive criteria, as the reference computes it: it is "
    "not clipped, so a reply that met a negative criterion can score below 0 (or one that met "
    "every positive criterion and no negative one exactly 1). Only the run's scores above "
    "(overall and by theme and axis) are means clipped to [0, 1]. A negative criterion "
    "(negative points) describes what a reply should not do: met means the reply did it, "
    "and its points are taken away; not met costs nothing. In each example's table a verdict "
    "that cost points (a positive criterion not met, a negative one met) is shown in red."
)


def examples_section(count: int, themes: list[str]) -> str:
    """The page's examples section: pager controls, the companion script, and the pager."""
    options = "".join(f"<option>{escape(t)}</option>" for t in themes)
    script = PAGER_SCRIPT % {
        "var": VARIABLE,
        "size": PAGE_SIZE,
        "file": COMPANION,
        "judges": JUDGES_SCRIPT,
    }
    return (
        f"<h2>Examples ({count})</h2><p class='muted'>Lowest scores first; in each example the "
        f"criteria that cost points come first. {PAGE_SIZE} per page; the detail is loaded from "
        f"{COMPANION} beside this file.</p>"
        f"<p class='muted' id='example-scores'>{SCORES_NOTE}</p>"
        "<p class='pager'>theme <select id='theme-filter'><option value=''>all</option>"
        f"{options}</select><button id='prev'>previous</button><span id='page-info'></span>"
        "<button id='next'>next</button></p><div id='examples'></div>"
        f"<script src='{COMPANION}'></script><script>{script}</script>"
    )
