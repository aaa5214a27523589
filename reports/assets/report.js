function openRun(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
var el=document.getElementById(id);if(el&&el.tagName==='DETAILS'){el.open=true;el.scrollIntoView();}}
window.addEventListener('hashchange',openRun);document.addEventListener('DOMContentLoaded',openRun);
function $(id){return document.getElementById(id);}
function visibleCells(tr){return Array.prototype.filter.call(tr.querySelectorAll('td[data-verdict]'),
  function(td){return !td.hidden;});}
function applyFilters(){
  var v=$('f-verdict').value,c=$('f-category').value,fw=$('f-framework').value,
      ch=!!$('f-changed')&&$('f-changed').checked,q=$('f-text').value.trim().toLowerCase(),shown=0;
  document.querySelectorAll('table.matrix [data-column]').forEach(function(el){
    el.hidden=!!fw&&el.dataset.column!==fw;});
  document.querySelectorAll('table.matrix tr.row').forEach(function(tr){
    var tds=visibleCells(tr);
    var ok=(!c||tr.dataset.category===c)&&(!q||tr.dataset.text.indexOf(q)>=0)
      &&(!v||tds.some(function(td){return td.dataset.verdict===v;}))
      &&(!ch||tds.some(function(td){return td.classList.contains('changed');}));
    tr.hidden=!ok;if(ok)shown++;});
  document.querySelectorAll('table.matrix tbody').forEach(function(tb){
    tb.querySelector('tr.cat').hidden=!tb.querySelector('tr.row:not([hidden])');});
  $('f-count').textContent=shown+' scenario(s) shown';
}
var sortedBy=null;
function rank(tr,col){var td=tr.querySelector('td[data-column="'+CSS.escape(col)+'"]');
  return td&&td.dataset.rank?Number(td.dataset.rank):-2;}
function sortBy(col){
  sortedBy=sortedBy===col?null:col;
  document.querySelectorAll('table.matrix tbody').forEach(function(tb){
    var rows=Array.prototype.slice.call(tb.querySelectorAll('tr.row'));
    rows.sort(function(a,b){if(sortedBy){var d=rank(b,sortedBy)-rank(a,sortedBy);if(d)return d;}
      return a.dataset.order-b.dataset.order;});
    rows.forEach(function(r){tb.appendChild(r);});});
  document.querySelectorAll('table.matrix th.fw').forEach(function(th){
    th.classList.toggle('sorted',th.dataset.column===sortedBy);});
}
document.addEventListener('DOMContentLoaded',function(){
  if(!$('filters'))return;
  ['f-verdict','f-category','f-framework','f-changed','f-text'].forEach(function(id){var el=$(id);
    if(el){el.addEventListener('input',applyFilters);el.addEventListener('change',applyFilters);}});
  document.querySelectorAll('table.matrix th.fw').forEach(function(th){
    th.addEventListener('click',function(){sortBy(th.dataset.column);});});
  applyFilters();
});
