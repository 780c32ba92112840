// The Analytics page's charts: each [data-chart] element holds its data (rendered by the server
// from the Query API's answer); uPlot draws it. Loaded after uPlot (both deferred), never inline.
;(function () {
  'use strict'
  var COLORS = ['#1f5fbf', '#d9480f', '#2b8a3e', '#862e9c']
  var HEIGHT = 240
  var charts = []

  // Counts: the axis starts at 0 and leaves a little room above the largest.
  function fromZero(u, min, max) {
    return [0, max > 0 ? Math.ceil(max * 1.1) : 1]
  }

  function widthOf(el) {
    return Math.max(260, el.clientWidth - 16)
  }

  function dailyOptions(spec, width) {
    return {
      width: width,
      height: HEIGHT,
      scales: { x: { time: true }, y: { range: fromZero } },
      series: [{ label: 'day', value: '{YYYY}-{MM}-{DD}' }].concat(
        spec.series.map(function (s, i) {
          return { label: s.label, stroke: COLORS[i % COLORS.length], width: 2, points: { show: true } }
        }),
      ),
      axes: [{}, { size: 50 }],
    }
  }

  function barOptions(spec, width) {
    var labels = spec.labels
    return {
      width: width,
      height: HEIGHT,
      scales: { x: { time: false, range: [-0.5, labels.length - 0.5] }, y: { range: fromZero } },
      series: [
        {
          label: spec.dimension,
          value: function (u, i) {
            return i == null ? '' : labels[Math.round(i)]
          },
        },
      ].concat(
        spec.series.map(function (s, i) {
          return {
            label: s.label,
            stroke: COLORS[i % COLORS.length],
            fill: COLORS[i % COLORS.length] + '99',
            paths: uPlot.paths.bars({ size: [0.7, 80] }),
            points: { show: false },
          }
        }),
      ),
      axes: [
        {
          splits: function () {
            return labels.map(function (_, i) {
              return i
            })
          },
          values: function (u, splits) {
            return splits.map(function (i) {
              var l = labels[i] || ''
              return l.length > 14 ? l.slice(0, 13) + '…' : l
            })
          },
          rotate: labels.length > 6 ? -45 : 0,
          size: labels.length > 6 ? 80 : 40,
        },
        { size: 50 },
      ],
    }
  }

  function draw(el) {
    var spec = JSON.parse(el.getAttribute('data-chart'))
    var xs = spec.labels.map(function (label, i) {
      return spec.kind === 'daily' ? Date.parse(label + 'T00:00:00Z') / 1000 : i
    })
    var data = [xs].concat(
      spec.series.map(function (s) {
        return s.values
      }),
    )
    var options = (spec.kind === 'daily' ? dailyOptions : barOptions)(spec, widthOf(el))
    var chart = new uPlot(options, data, el)
    // What was drawn, for a reader that cannot see the canvas (and the browser tests).
    el.setAttribute('data-drawn', JSON.stringify(chart.data.slice(1)))
    charts.push({ el: el, chart: chart })
  }

  document.querySelectorAll('[data-chart]').forEach(draw)

  var pending = 0
  window.addEventListener('resize', function () {
    clearTimeout(pending)
    pending = setTimeout(function () {
      charts.forEach(function (c) {
        c.chart.setSize({ width: widthOf(c.el), height: HEIGHT })
      })
    }, 150)
  })

  // "Copy the query": the text of the element the button names.
  document.addEventListener('click', function (event) {
    var button = event.target.closest && event.target.closest('[data-copy]')
    if (!button) return
    var text = document.getElementById(button.getAttribute('data-copy')).textContent
    var done = function () {
      button.textContent = 'Copied'
    }
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done)
    else {
      var range = document.createRange()
      range.selectNodeContents(document.getElementById(button.getAttribute('data-copy')))
      var selection = window.getSelection()
      selection.removeAllRanges()
      selection.addRange(range)
      button.textContent = 'Selected: press Ctrl+C'
    }
  })
})()
