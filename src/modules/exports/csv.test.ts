import assert from 'node:assert/strict';
import { test } from 'node:test';
import { csvCell, csvLine } from './csv.ts';

test('cells are quoted when they hold a comma, a quote or a line break', () => {
  assert.equal(
    csvLine(['a', 'b,c', 'say "hi"', 'two\nlines', null, 3]),
    'a,"b,c","say ""hi""","two\nlines",,3\r\n',
  );
});

test('text a spreadsheet would run as a formula gets a leading apostrophe; plain numbers do not', () => {
  assert.equal(csvCell('=SUM(A1:A2)'), "'=SUM(A1:A2)");
  assert.equal(csvCell('+1+1'), "'+1+1");
  assert.equal(csvCell('@cmd'), "'@cmd");
  assert.equal(csvCell('-1+2'), "'-1+2");
  assert.equal(csvCell('\tx'), "'\tx");
  assert.equal(csvCell('-3.00'), '-3.00');
  assert.equal(csvCell('12.50'), '12.50');
  assert.equal(csvCell('=a,b'), `"'=a,b"`);
});
