// A small Markdown renderer for the guides in docs/: the subset they use (ATX headings with GitHub's
// anchor ids, paragraphs, fenced code, pipe tables, nested lists, block quotes, inline code, bold,
// italics, links, backslash escapes). Every piece of text is HTML-escaped; raw HTML is not passed
// through, so a guide can never inject script into a page served under a strict CSP.

export interface RenderedMarkdown {
  html: string;
  title: string;
  /** Ids of the headings, for checking links to #anchors. */
  anchors: string[];
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/`|\*\*|\[|\]\([^)]*\)/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

/**
 * Inline markup: code spans (literal) and links (whose label may hold code) are rendered first and
 * held as placeholders, so bold and italics may span them and nothing inside them is re-read.
 */
function inline(text: string, href: (target: string) => string): string {
  const held: string[] = [];
  const hold = (html: string) => `\uE001${held.push(html) - 1}\uE001`;
  const pattern = /(`+)([\s\S]*?[^`])\1(?!`)|\[((?:[^\]`]|`[^`]*`)+)\]\(([^)\s]+)\)/g;
  const marked = text.replace(
    pattern,
    (_, ticks: string | undefined, code: string, label: string, target: string) => {
      if (ticks !== undefined) return hold(`<code>${escapeHtml(code.trim())}</code>`);
      const resolved = href(target);
      const external = /^https?:/.test(resolved) ? ' rel="noopener"' : '';
      return hold(`<a href="${escapeHtml(resolved)}"${external}>${inline(label, href)}</a>`);
    },
  );
  return spans(marked).replace(/\uE001(\d+)\uE001/g, (_, index: string) => held[Number(index)]);
}

function spans(text: string): string {
  // Backslash escapes become placeholders so the markup patterns below do not see them.
  const escaped: string[] = [];
  let out = text.replace(
    /\\([\\`*_{}[\]()#+\-.!|>])/g,
    (_, c: string) => `\uE000${escaped.push(c) - 1}\uE000`,
  );
  out = escapeHtml(out);
  out = out.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
  out = out.replace(/(^|[^\w*])\*([^*\s][^*]*)\*(?!\w)/g, '$1<em>$2</em>');
  out = out.replace(/(^|[^\w])_([^_\s][^_]*)_(?!\w)/g, '$1<em>$2</em>');
  return out.replace(/\uE000(\d+)\uE000/g, (_, index: string) => escapeHtml(escaped[Number(index)]));
}

function tableRow(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let inCode = false;
  const body = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  for (let i = 0; i < body.length; i += 1) {
    const c = body[i];
    if (c === '\\' && body[i + 1] === '|') {
      cell += '|';
      i += 1;
    } else if (c === '`') {
      inCode = !inCode;
      cell += c;
    } else if (c === '|' && !inCode) {
      cells.push(cell.trim());
      cell = '';
    } else cell += c;
  }
  cells.push(cell.trim());
  return cells;
}

const LIST_ITEM = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/;

/** Renders `markdown`; `href` maps each link target (so relative .md links become site paths). */
export function renderMarkdown(
  markdown: string,
  href: (target: string) => string = (t) => t,
): RenderedMarkdown {
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  const html: string[] = [];
  const anchors: string[] = [];
  let title = '';
  let i = 0;
  const isBlank = (line: string | undefined) => line === undefined || line.trim() === '';
  const startsBlock = (line: string) =>
    /^(#{1,6}\s|```|>|\s*\|)/.test(line) || LIST_ITEM.test(line) || /^\s*(-{3,}|\*{3,})\s*$/.test(line);

  function list(baseIndent: number): string {
    const first = LIST_ITEM.exec(lines[i]);
    const ordered = first ? /\d/.test(first[2]) : false;
    const items: string[] = [];
    while (i < lines.length) {
      const match = LIST_ITEM.exec(lines[i]);
      if (!match || match[1].length !== baseIndent || /\d/.test(match[2]) !== ordered) break;
      const content = [match[3]];
      const childIndent = baseIndent + match[2].length + 1;
      i += 1;
      let nested = '';
      while (i < lines.length && !isBlank(lines[i])) {
        const child = LIST_ITEM.exec(lines[i]);
        if (child && child[1].length > baseIndent) {
          nested += list(child[1].length);
          continue;
        }
        if (child || !/^\s/.test(lines[i])) break;
        content.push(lines[i].trim());
        i += 1;
      }
      // A blank line followed by more of the same list (or an indented continuation) keeps it going.
      if (isBlank(lines[i]) && i + 1 < lines.length) {
        const next = LIST_ITEM.exec(lines[i + 1]);
        if (next && next[1].length === baseIndent && /\d/.test(next[2]) === ordered) i += 1;
        else if (lines[i + 1].startsWith(' '.repeat(childIndent))) i += 1;
      }
      items.push(`<li>${inline(content.join(' '), href)}${nested}</li>`);
    }
    return ordered ? `<ol>${items.join('')}</ol>` : `<ul>${items.join('')}</ul>`;
  }

  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i += 1;
      continue;
    }
    const fence = /^(\s*)```\s*([\w-]*)/.exec(line);
    if (fence) {
      const code: string[] = [];
      i += 1;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) code.push(lines[i++]);
      i += 1;
      const language = fence[2] ? ` class="language-${escapeHtml(fence[2])}"` : '';
      html.push(`<pre><code${language}>${escapeHtml(code.join('\n'))}</code></pre>`);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const level = heading[1].length;
      const id = slug(heading[2]);
      anchors.push(id);
      if (level === 1 && !title) title = heading[2].replace(/`/g, '');
      html.push(`<h${level} id="${escapeHtml(id)}">${inline(heading[2], href)}</h${level}>`);
      i += 1;
      continue;
    }
    if (/^\s*(-{3,}|\*{3,})\s*$/.test(line)) {
      html.push('<hr>');
      i += 1;
      continue;
    }
    if (/^\s*\|/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{3,}/.test(lines[i + 1])) {
      const header = tableRow(line);
      i += 2;
      const rows: string[][] = [];
      while (i < lines.length && /^\s*\|/.test(lines[i])) rows.push(tableRow(lines[i++]));
      const cells = (row: string[], tag: string) =>
        row.map((cell) => `<${tag}>${inline(cell, href)}</${tag}>`).join('');
      html.push(
        `<div class="table"><table><thead><tr>${cells(header, 'th')}</tr></thead><tbody>${rows
          .map((row) => `<tr>${cells(row, 'td')}</tr>`)
          .join('')}</tbody></table></div>`,
      );
      continue;
    }
    if (/^>/.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && /^>/.test(lines[i])) quoted.push(lines[i++].replace(/^>\s?/, ''));
      html.push(`<blockquote>${renderMarkdown(quoted.join('\n'), href).html}</blockquote>`);
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      html.push(list(item[1].length));
      continue;
    }
    const paragraph: string[] = [];
    while (i < lines.length && !isBlank(lines[i]) && (paragraph.length === 0 || !startsBlock(lines[i])))
      paragraph.push(lines[i++].trim());
    html.push(`<p>${inline(paragraph.join(' '), href)}</p>`);
  }
  return { html: html.join('\n'), title, anchors };
}
