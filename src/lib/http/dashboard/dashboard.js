// agent-task operator dashboard: polls /ui/api/overview every 2 s and
// redraws the overview. Served from the binary (no build step, no
// framework). Every value is set with textContent (never innerHTML), after
// control and bidirectional characters were made visible, as the server's
// pages show them.
'use strict';
(function () {
  const root = document.getElementById('overview');
  if (!root) {
    return;
  }
  const notice = document.getElementById('notice');
  const readAt = document.getElementById('read-at');
  const EVERY_MS = 2000;
  let lastGood = null;

  // Control characters (but newline and tab) as \xNN, C1 and bidirectional
  // controls as \u{NNNN}, a backslash doubled: what explain::inert does.
  function inert(value) {
    const s = String(value);
    let out = '';
    for (const ch of s) {
      const c = ch.codePointAt(0);
      if (ch === '\n' || ch === '\t') {
        out += ch;
      } else if (ch === '\\') {
        out += '\\\\';
      } else if (c < 0x20 || c === 0x7f) {
        out += '\\x' + c.toString(16).padStart(2, '0');
      } else if ((c >= 0x80 && c < 0xa0) || c === 0x200e || c === 0x200f ||
                 (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)) {
        out += '\\u{' + c.toString(16) + '}';
      } else {
        out += ch;
      }
    }
    return out;
  }

  // A class name from a state: [a-z_] only, else "unknown".
  function cls(s) {
    return typeof s === 'string' && /^[a-z_]{1,32}$/.test(s) ? s : 'unknown';
  }

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) {
      e.className = className;
    }
    if (text !== undefined && text !== null) {
      e.textContent = inert(text);
    }
    return e;
  }

  function short(s, n) {
    return Array.from(String(s)).slice(0, n).join('');
  }

  function lease(ms) {
    if (ms === null || ms === undefined) {
      return '-';
    }
    if (ms >= 60000) {
      return Math.floor(ms / 60000) + 'm' + String(Math.floor((ms % 60000) / 1000)).padStart(2, '0') + 's';
    }
    return Math.floor(ms / 1000) + '.' + Math.floor((ms % 1000) / 100) + 's';
  }

  function badge(text, extra) {
    return el('span', extra ? 'badge ' + extra : 'badge', text);
  }

  function card(c) {
    const a = el('article', 'change state-' + cls(c.state));
    a.dataset.change = inert(c.change_id);
    const h = el('h3');
    const link = el('a', null, c.title === null ? '(untitled)' : c.title);
    link.href = '/ui/change/' + encodeURIComponent(c.change_id);
    h.appendChild(link);
    a.appendChild(h);
    const badges = el('p', 'badges');
    badges.appendChild(badge(c.state, 'state'));
    badges.appendChild(badge(c.qualified ? 'qualified' : 'not qualified', 'qualified-' + (c.qualified === true)));
    a.appendChild(badges);
    const dl = el('dl');
    const rev = c.revision === null ? '-' : short(c.revision, 12);
    for (const [k, v] of [
      ['Change', c.change_id],
      ['Repository', c.repository + ' / ' + c.profile],
      ['Agent', c.agent_id + ' (' + c.owner_id + ')'],
      ['Version', c.version + ' · revision ' + rev],
    ]) {
      dl.appendChild(el('dt', null, k));
      dl.appendChild(el('dd', null, v));
    }
    a.appendChild(dl);
    if (c.tasks.length > 0) {
      const table = el('table', 'tasks');
      const head = el('tr');
      for (const k of ['Step', 'Task', 'State', 'Attempt', 'Holder', 'Fence', 'Lease left']) {
        head.appendChild(el('th', null, k));
      }
      table.appendChild(el('thead')).appendChild(head);
      const body = el('tbody');
      for (const t of c.tasks) {
        const tr = el('tr');
        const step = el('td', null, t.step_id);
        if (!t.required) {
          step.appendChild(document.createTextNode(' '));
          step.appendChild(el('span', 'muted', '(optional)'));
        }
        tr.appendChild(step);
        tr.appendChild(el('td', 'id', short(t.task_id, 16)));
        tr.appendChild(el('td', 'task-state state-' + cls(t.state), t.state));
        const at = t.attempt;
        if (at) {
          tr.appendChild(el('td', 'attempt-state state-' + cls(at.state), at.state));
          tr.appendChild(el('td', null, at.agent_id));
          tr.appendChild(el('td', null, String(at.fence)));
          tr.appendChild(el('td', null, lease(at.lease_remaining_ms)));
        } else {
          tr.appendChild(el('td', 'attempt-state', '-'));
          for (let i = 0; i < 3; i++) {
            tr.appendChild(el('td', null, '-'));
          }
        }
        body.appendChild(tr);
      }
      table.appendChild(body);
      a.appendChild(table);
    }
    if (c.receipts.length > 0) {
      const p = el('p', 'receipts', 'Receipts: ');
      for (const r of c.receipts) {
        p.appendChild(badge('v' + r.version + ' ' + short(r.receipt_digest, 12)));
      }
      a.appendChild(p);
    }
    if (c.landings.length > 0) {
      const p = el('p', 'landings', 'Landings: ');
      for (const l of c.landings) {
        p.appendChild(badge('v' + l.version + ' ' + l.state + ' ' + (l.git_commit === null ? '' : short(l.git_commit, 12))));
      }
      a.appendChild(p);
    }
    return a;
  }

  function render(o) {
    const frag = document.createDocumentFragment();
    if (o.changes.length === 0) {
      frag.appendChild(el('p', 'empty', 'No Changes.'));
    }
    let i = 0;
    while (i < o.changes.length) {
      const group = o.changes[i].group;
      let j = i;
      while (j < o.changes.length && o.changes[j].group === group) {
        j++;
      }
      const section = el('section', 'group');
      const h = el('h2');
      if (group === null) {
        h.textContent = 'Without a group';
      } else {
        h.appendChild(document.createTextNode('Group '));
        h.appendChild(el('span', 'label', group));
        h.appendChild(document.createTextNode(' '));
        h.appendChild(el('span', 'muted', (j - i) + ' Change(s) for the same work'));
      }
      section.appendChild(h);
      const side = el('div', 'side');
      for (const c of o.changes.slice(i, j)) {
        side.appendChild(card(c));
      }
      section.appendChild(side);
      frag.appendChild(section);
      i = j;
    }
    if (o.truncated) {
      frag.appendChild(el('p', 'notice', 'More Changes matched than are shown: narrow the filters.'));
    }
    root.replaceChildren(frag);
    readAt.textContent = new Date(o.now_ms).toISOString();
  }

  function stale(why) {
    notice.textContent = inert('Could not refresh (' + why + '); ' +
      (lastGood === null ? 'nothing read yet' : 'showing what was read at ' + lastGood) +
      '. Retrying every 2 s.');
    notice.hidden = false;
  }

  async function poll() {
    try {
      const r = await fetch('/ui/api/overview' + window.location.search, {
        credentials: 'same-origin',
        cache: 'no-store',
        headers: { Accept: 'application/json' },
      });
      if (r.status === 401) {
        window.location.assign('/ui/login');
        return;
      }
      const body = await r.json();
      if (!r.ok) {
        stale(String(body.error || r.status) + ': ' + String(body.message || ''));
      } else {
        render(body);
        lastGood = new Date(body.now_ms).toISOString();
        notice.hidden = true;
      }
    } catch (e) {
      stale(String(e && e.message ? e.message : e));
    }
    window.setTimeout(poll, EVERY_MS);
  }

  if (readAt.textContent !== 'never') {
    lastGood = readAt.textContent;
  }
  window.setTimeout(poll, EVERY_MS);
})();
