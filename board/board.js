(function () {
  "use strict";
  var tip = document.getElementById("tip");
  var lit = [];
  // The SVG's <title>s are the hover text without script; with it, the
  // styled tip shows the same text, once.
  var titles = document.querySelectorAll("svg.chart title");
  for (var k = 0; k < titles.length; k++) titles[k].parentNode.removeChild(titles[k]);
  function light(id) {
    for (var i = 0; i < lit.length; i++) lit[i].classList.remove("hl");
    lit = [];
    document.body.classList.toggle("focus", !!id);
    if (!id) return;
    var els = document.querySelectorAll('[data-series="' + id + '"]');
    for (var j = 0; j < els.length; j++) { els[j].classList.add("hl"); lit.push(els[j]); }
  }
  function place(e) {
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var x = Math.min(e.clientX + 14, window.innerWidth - w - 8);
    var y = e.clientY + 16;
    if (y + h > window.innerHeight - 8) y = e.clientY - h - 12;
    tip.style.left = Math.max(8, x) + "px";
    tip.style.top = Math.max(8, y) + "px";
  }
  document.addEventListener("mouseover", function (e) {
    var s = e.target.closest ? e.target.closest("[data-series]") : null;
    light(s ? s.getAttribute("data-series") : "");
    var t = e.target.closest ? e.target.closest("[data-tip]") : null;
    if (t) { tip.textContent = t.getAttribute("data-tip"); tip.hidden = false; place(e); } else { tip.hidden = true; }
  });
  document.addEventListener("mousemove", function (e) { if (!tip.hidden) place(e); });
  document.addEventListener("mouseleave", function () { tip.hidden = true; light(""); });
})();
