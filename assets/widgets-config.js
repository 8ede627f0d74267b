// Loaded (only on pages with saved widget state) between require.js and the
// widget manager, see nb_ipywidgets_js in _config.yml. The manager computes
// where its icon fonts live from its AMD module path, which require.js would
// resolve against the page's folder; point it at our self-hosted copy instead.
(function () {
  var here = document.currentScript && document.currentScript.src;
  if (!here || typeof require === "undefined" || !require.config) { return; }
  var staticRoot = here.replace(/widgets-config\.js(\?.*)?$/, "");
  require.config({paths: {"@jupyter-widgets/html-manager/dist": staticRoot + "html-manager"}});
})();
