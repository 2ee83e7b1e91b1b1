/* A Worker for the site opened from disk (file://), where browsers refuse web workers, so that
   search works without a server. The worker's script runs in a hidden iframe of the page and
   messages pass between the two windows, as the iframe-worker package does; this file is
   fedsel's own, so the site requests nothing outside itself. mkdocs.yml names it in
   extra.polyfills (the Material theme's offline plugin then adds no shim of its own); the
   theme's search worker reads "IFrameWorker" in its parent to find its base URL. Served over
   HTTP it does nothing. */
(function () {
  "use strict";
  if (location.protocol !== "file:") return;

  function IFrameWorker(url) {
    var worker = this;
    this.onmessage = null;
    this.onerror = null;
    this._events = document.createElement("span");
    this._queue = [];
    this._ready = false;
    var iframe = document.createElement("iframe");
    iframe.hidden = true;
    iframe.setAttribute("aria-hidden", "true");
    iframe.setAttribute("tabindex", "-1");
    (document.body || document.documentElement).appendChild(iframe);
    this._iframe = iframe;
    var w = iframe.contentWindow;
    this._window = w;
    w.postMessage = function (data) {  // the worker's postMessage: to the page
      var event = new MessageEvent("message", { data: data });
      worker._events.dispatchEvent(event);
      if (typeof worker.onmessage === "function") worker.onmessage(event);
    };
    w.importScripts = function () {  // in order; a Promise (the theme awaits it)
      var urls = Array.prototype.slice.call(arguments);
      return urls.reduce(function (done, src) {
        return done.then(function () { return load(w.document, src); });
      }, Promise.resolve());
    };
    w.addEventListener("error", function (e) {
      var event = new ErrorEvent("error", { message: e.message, error: e.error });
      worker._events.dispatchEvent(event);
      if (typeof worker.onerror === "function") worker.onerror(event);
    });
    load(w.document, url).then(function () {
      worker._ready = true;
      worker._queue.splice(0).forEach(function (data) { worker.postMessage(data); });
    });
  }

  function load(doc, src) {
    return new Promise(function (resolve, reject) {
      var script = doc.createElement("script");
      script.src = src;
      script.onload = function () { resolve(); };
      script.onerror = function () { reject(new Error("cannot load " + src)); };
      (doc.head || doc.documentElement).appendChild(script);
    });
  }

  IFrameWorker.prototype.postMessage = function (data) {  // the page's: to the worker
    if (!this._ready) { this._queue.push(data); return; }
    var w = this._window;
    w.dispatchEvent(new w.MessageEvent("message", { data: data }));
  };
  IFrameWorker.prototype.addEventListener = function (type, fn, options) {
    this._events.addEventListener(type, fn, options);
  };
  IFrameWorker.prototype.removeEventListener = function (type, fn, options) {
    this._events.removeEventListener(type, fn, options);
  };
  IFrameWorker.prototype.terminate = function () {
    this._iframe.remove();
  };

  window.IFrameWorker = IFrameWorker;
  window.Worker = IFrameWorker;
})();
