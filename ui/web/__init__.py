"""The Streamlit web app (`gatehouse ui`): app.py is the entry point."""
